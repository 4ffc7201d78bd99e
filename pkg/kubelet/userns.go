package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// podUserNamespace is the user namespace of pod's sandbox (upstream's
// GetOrCreateUserNamespaceMappings), on the runtime handler of its RuntimeClass.
func (k *Kubelet) podUserNamespace(ctx context.Context, pod *v1.Pod, handler string) (*cri.UserNamespace, error) {
	return k.userns.UserNamespace(klog.FromContext(ctx), pod, handler)
}

// runtimeHandler is the handler of a pod's RuntimeClass (upstream's LookupRuntimeHandler,
// services.go); "" without an API server.
func (k *Kubelet) runtimeHandler(ctx context.Context, runtimeClassName *string) (string, error) {
	if k.objects == nil {
		return "", nil
	}
	return k.objects.RuntimeHandler(ctx, runtimeClassName)
}

// handlerSupportsUserNamespaces is upstream's HandlerSupportsUserNamespaces: what the
// runtime's last ready status says of the handler; no handlers (an older runtime, or none
// reported yet) is no.
func (k *Kubelet) handlerSupportsUserNamespaces(handler string) (bool, error) {
	handlers := k.state.Handlers()
	if len(handlers) == 0 {
		return false, nil
	}
	for _, h := range handlers {
		if h.Name == handler {
			return h.UserNamespaces, nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", handler)
}
