package kubelet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// pullCredentials reads the pod's imagePullSecrets (kubernetes.io/dockerconfigjson and
// kubernetes.io/dockercfg) into registry credentials, as the kubelet's keyring does. A
// secret that cannot be read or parsed is logged and skipped: the pull then goes
// anonymous, as upstream.
func (k *Kubelet) pullCredentials(ctx context.Context, pod *v1.Pod) []cri.AuthConfig {
	var out []cri.AuthConfig
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := k.objects.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Unable to read an image pull secret", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
			continue
		}
		creds, err := dockerCredentials(s)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Unable to parse an image pull secret", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
			continue
		}
		out = append(out, creds...)
	}
	return out
}

// dockerConfigEntry is one registry's entry of a docker config.
type dockerConfigEntry struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// dockerCredentials parses a pull secret: {"auths": {server: entry}} (dockerconfigjson) or
// {server: entry} (the older dockercfg).
func dockerCredentials(s *v1.Secret) ([]cri.AuthConfig, error) {
	entries := map[string]dockerConfigEntry{}
	switch {
	case len(s.Data[v1.DockerConfigJsonKey]) > 0:
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[v1.DockerConfigJsonKey], &cfg); err != nil {
			return nil, err
		}
		entries = cfg.Auths
	case len(s.Data[v1.DockerConfigKey]) > 0:
		if err := json.Unmarshal(s.Data[v1.DockerConfigKey], &entries); err != nil {
			return nil, err
		}
	}
	out := make([]cri.AuthConfig, 0, len(entries))
	for server, e := range entries {
		user, pass := e.Username, e.Password
		if e.Auth != "" && user == "" {
			if raw, err := base64.StdEncoding.DecodeString(e.Auth); err == nil {
				user, pass, _ = strings.Cut(string(raw), ":")
			}
		}
		out = append(out, cri.AuthConfig{Username: user, Password: pass, Auth: e.Auth, ServerAddress: server})
	}
	return out, nil
}
