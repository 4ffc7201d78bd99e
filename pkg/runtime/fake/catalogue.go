package fake

import (
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// imageInfoLocked is what a pulled image gives its containers: the catalogue's config and
// tree, or for an image nobody catalogued a generic userland (a shell and the usual
// utilities, so `sh -c` works in any image) and no entrypoint.
// It is made once per pulled image and shared, read-only, by its containers.
func (r *Runtime) imageInfoLocked(img *cri.Image) *imageInfo {
	if info, ok := r.imageInfos[img]; ok {
		return info
	}
	cfg, tree, known := imageConfig(img)
	info := &imageInfo{
		known:      known,
		entrypoint: cfg.Entrypoint,
		cmd:        cfg.Cmd,
		env:        cfg.Env,
		workingDir: cfg.WorkingDir,
		user:       cfg.User,
		stopSignal: cfg.StopSignal,
		tree:       tree,
	}
	if r.imageInfos == nil {
		r.imageInfos = map[*cri.Image]*imageInfo{}
	}
	r.imageInfos[img] = info
	return info
}
