package kubelet

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// fileProjection is one file of a volume's payload (upstream's volumeutil.FileProjection).
type fileProjection struct {
	data []byte
	mode fs.FileMode
	// fsUser, when set, owns the file (a projected service account token of a pod whose
	// containers all run as that user).
	fsUser *int64
}

// The atomic writer's layout (upstream pkg/volume/util/atomic_writer.go): the payload lives
// in a timestamped directory "..2006_01_02_15_04_05.<n>", "..data" links to it, and each
// top-level name of the payload links into "..data", so an update is one rename of the
// "..data" link and a reader never sees a mix of old and new files.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// maxFileNameLength and maxPathLength bound payload paths.
	maxFileNameLength = 255
	maxPathLength     = 4096
)

// atomicWriter writes payloads into a volume directory of the node's filesystem.
type atomicWriter struct {
	fs        *vfs.View
	targetDir string
	now       func() time.Time
}

// write makes the volume hold exactly payload: nothing happens when it already does;
// otherwise the files go into a new timestamped directory, "..data" is swapped to it, the
// top-level links of new names are made, those of names gone are removed, and the old
// directory is removed. It reports whether it wrote.
func (w *atomicWriter) write(payload map[string]fileProjection) (bool, error) {
	clean, err := validatePayload(payload)
	if err != nil {
		return false, err
	}
	dataDir := path.Join(w.targetDir, dataDirName)
	oldTsDir := ""
	if info, err := w.fs.Lstat(dataDir); err == nil && info.Mode&fs.ModeSymlink != 0 {
		oldTsDir = info.Target
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read link %s: %w", dataDir, err)
	}
	var toRemove []string
	if oldTsDir != "" {
		oldTsPath := path.Join(w.targetDir, oldTsDir)
		if !w.shouldWrite(clean, oldTsPath) {
			return false, nil
		}
		if toRemove, err = w.pathsToRemove(clean, oldTsPath); err != nil {
			return false, err
		}
	}
	tsDir, err := w.newTimestampDir()
	if err != nil {
		return false, err
	}
	if err := w.writePayloadToDir(clean, path.Join(w.targetDir, tsDir)); err != nil {
		return false, err
	}
	tmpLink := path.Join(w.targetDir, newDataDirName)
	_ = w.fs.Remove(tmpLink, false) // a leftover of an interrupted write
	if err := w.fs.Symlink(tsDir, tmpLink); err != nil {
		return false, fmt.Errorf("link %s: %w", tmpLink, err)
	}
	if err := w.fs.Rename(tmpLink, dataDir); err != nil {
		return false, fmt.Errorf("rename %s to %s: %w", tmpLink, dataDir, err)
	}
	if err := w.createUserVisibleFiles(clean); err != nil {
		return false, err
	}
	for _, p := range toRemove {
		if err := w.fs.Remove(path.Join(w.targetDir, p), true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if oldTsDir != "" {
		if err := w.fs.Remove(path.Join(w.targetDir, oldTsDir), true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("remove %s: %w", oldTsDir, err)
		}
	}
	return true, nil
}

// validatePayload cleans the payload's paths, refusing the ones upstream's validatePath
// refuses, with its messages.
// A payload whose paths are all clean, as nearly all are, is returned as it is: it is made
// again at every sync of the pod.
func validatePayload(payload map[string]fileProjection) (map[string]fileProjection, error) {
	allClean := true
	for p := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		allClean = allClean && path.Clean(p) == p
	}
	if allClean {
		return payload, nil
	}
	clean := make(map[string]fileProjection, len(payload))
	for p, f := range payload {
		clean[path.Clean(p)] = f
	}
	return clean, nil
}

func validatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	case path.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	for item := range strings.SplitSeq(p, "/") {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if first := topLevel(p); strings.HasPrefix(first, "..") && len(first) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// shouldWrite reports whether the payload differs from what the timestamped directory
// holds (a file's content or mode, or the set of files).
func (w *atomicWriter) shouldWrite(payload map[string]fileProjection, tsPath string) bool {
	n := 0
	if err := walkFiles(w.fs, tsPath, "", func(rel string, info vfs.Info) {
		n++
	}); err != nil {
		return true
	}
	if n != len(payload) {
		return true
	}
	for p, f := range payload {
		full := path.Join(tsPath, p)
		info, err := w.fs.Lstat(full)
		if err != nil || info.Mode.Perm() != f.mode.Perm() {
			return true
		}
		if same, err := w.fs.FileEquals(full, f.data); err != nil || !same {
			return true
		}
	}
	return false
}

// pathsToRemove are the top-level names of the old payload the new one no longer has.
func (w *atomicWriter) pathsToRemove(payload map[string]fileProjection, oldTsPath string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		keep[topLevel(p)] = true
	}
	entries, err := w.fs.ReadDir(oldTsPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", oldTsPath, err)
	}
	var out []string
	for _, e := range entries {
		if !keep[e.Name()] {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func topLevel(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

// newTimestampDir makes the directory of a new payload, named as upstream's (the UTC time
// and a number os.MkdirTemp would pick at random; here derived from the time, so a
// simulation replays the same names), mode 0755 so that any user can read through it.
func (w *atomicWriter) newTimestampDir() (string, error) {
	now := w.now().UTC()
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", w.targetDir, now.UnixNano())
	n := h.Sum32()
	for i := uint32(0); ; i++ {
		name := now.Format("..2006_01_02_15_04_05.") + fmt.Sprint(n+i)
		err := w.fs.Mkdir(path.Join(w.targetDir, name), 0o755, 0, 0)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create a timestamped directory in %s: %w", w.targetDir, err)
		}
		return name, nil
	}
}

// writePayloadToDir writes each file with its mode (and owner), making the directories
// between (0755).
func (w *atomicWriter) writePayloadToDir(payload map[string]fileProjection, dir string) error {
	paths := make([]string, 0, len(payload))
	for p := range payload {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := payload[p]
		full := path.Join(dir, p)
		if err := w.fs.MkdirAll(path.Dir(full), 0o755, 0, 0); err != nil {
			return fmt.Errorf("create %s: %w", path.Dir(full), err)
		}
		// Shared, not copied: a payload's data is the API objects' own (see stringBytes),
		// which nothing writes; the ca.crt of a node's pods is then held once.
		if err := w.fs.WriteFileShared(full, f.data, f.mode, 0, 0); err != nil {
			return fmt.Errorf("write %s: %w", full, err)
		}
		if err := w.fs.Chmod(full, f.mode); err != nil {
			return fmt.Errorf("chmod %s: %w", full, err)
		}
		if f.fsUser != nil {
			if err := w.fs.Chown(full, *f.fsUser, -1); err != nil {
				return fmt.Errorf("chown %s: %w", full, err)
			}
		}
	}
	return nil
}

// createUserVisibleFiles links each top-level name of the payload into "..data".
func (w *atomicWriter) createUserVisibleFiles(payload map[string]fileProjection) error {
	names := map[string]bool{}
	for p := range payload {
		names[topLevel(p)] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		link := path.Join(w.targetDir, name)
		if _, err := w.fs.Lstat(link); err == nil {
			continue
		}
		if err := w.fs.Symlink(dataDirName+"/"+name, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	return nil
}

// walkFiles calls fn for each file (not directory) under dir, depth first in name order,
// with its path relative to dir. Symbolic links are not followed.
func walkFiles(nodeFS *vfs.View, dir, rel string, fn func(rel string, info vfs.Info)) error {
	entries, err := nodeFS.ReadDir(path.Join(dir, rel))
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(rel, e.Name())
		if e.IsDir() {
			if err := walkFiles(nodeFS, dir, p, fn); err != nil {
				return err
			}
			continue
		}
		fn(p, e.Stat())
	}
	return nil
}
