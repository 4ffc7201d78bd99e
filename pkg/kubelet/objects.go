package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// objectSource is where the kubelet reads the API objects pods refer to: ConfigMaps and
// Secrets (env, envFrom and volumes) and service account tokens (projected volumes). A
// ConfigMap or Secret the API server does not have is an error for which
// apierrors.IsNotFound holds, worded as the kubelet's managers word it (`configmap "x" not
// found`). Called from pod syncs, which may wait for the API server.
type objectSource interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	ServiceAccountToken(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error)
}

// The resources of NotFound errors, as the kubelet's ConfigMap and Secret managers name them.
var (
	configMapResource = schema.GroupResource{Resource: "configmap"}
	secretResource    = schema.GroupResource{Resource: "secret"}
)

// errStandalone is what a standalone kubelet (no API server) answers for a ConfigMap or a
// Secret a pod refers to, as upstream's volume host does.
var errStandalone = errors.New("not supported due to running kubelet in standalone mode")

// objectGetTimeout bounds one API read or token request: the API server's own request
// timeout (--request-timeout, 1m). Upstream's calls have no deadline of their own, so the
// server's applies; a shorter one here gave up on tokens that an API server busy with a
// thousand nodes issued in 5 to 10 s, and asked again, for more of its time.
const objectGetTimeout = time.Minute

// apiObjects keeps the ConfigMaps and Secrets of the node's pods and their service
// account tokens, read from the API server in cluster mode, as the configured
// configMapAndSecretChangeDetectionStrategy says:
//   - Watch (the default; the daemon only, objectwatch.go): a watch of each object from
//     when a pod that refers to it arrives;
//   - Cache: a pod's objects are read when the pod arrives (the Node authorizer lets a node
//     read only what its pods refer to), and read again by a sync that finds its copy older
//     than ttl, so that a change reaches the pod's volumes within about a sync period;
//   - Get: read at every use.
//
// Safe for concurrent use.
type apiObjects struct {
	client   kubernetes.Interface // nil: standalone
	caller   *cluster.Caller      // runs the reads of pod syncs off the loops' goroutines
	clock    clock.PassiveClock
	ttl      time.Duration
	strategy changeDetection
	maxIdle  time.Duration // a watch not read for this long stops until it is read again

	// observe, if set, is told every object read and when its read began (the flight
	// recorder).
	observe func(obj any, began time.Time)

	mu         sync.Mutex
	configMaps map[string]cached[v1.ConfigMap] // by namespace/name
	secrets    map[string]cached[v1.Secret]
	// serviceLists are the Services listed, by namespace/, and runtimeClasses the
	// RuntimeClasses read, by /name, where they are not watched; serviceWatch and
	// runtimeClassWatch, when they are (the daemon, services.go).
	serviceLists      map[string]cached[v1.ServiceList]
	runtimeClasses    map[string]cached[nodev1.RuntimeClass]
	serviceWatch      *clusterWatch
	runtimeClassWatch *clusterWatch
	tokens            map[string]cachedToken
	// prunedFor are the pods of the last prune (housekeeping's, every 2 s), and
	// prunedRefs the objects they refer to, by namespace/name.
	prunedFor  podSet
	prunedRefs struct{ configMaps, secrets map[string]bool }
	// watching: the Watch strategy's watches serve the ConfigMaps and Secrets.
	watching bool
	watches  map[watchKey]*objectWatch
}

// changeDetection is configMapAndSecretChangeDetectionStrategy.
type changeDetection string

const (
	watchStrategy changeDetection = "Watch"
	cacheStrategy changeDetection = "Cache"
	getStrategy   changeDetection = "Get"
)

// podSet remembers a list of pod objects, to tell whether a later list holds the same ones.
type podSet map[*v1.Pod]struct{}

func (s podSet) same(pods []*v1.Pod) bool {
	if s == nil || len(s) != len(pods) {
		return false
	}
	for _, p := range pods {
		if _, ok := s[p]; !ok {
			return false
		}
	}
	return true
}

func (s *podSet) set(pods []*v1.Pod) {
	m := make(podSet, len(pods))
	for _, p := range pods {
		m[p] = struct{}{}
	}
	*s = m
}

// cached is an object as last read; obj is nil when the API server did not have it.
type cached[T any] struct {
	obj     *T
	fetched time.Time
}

// cachedToken is a token the TokenRequest API issued.
type cachedToken struct {
	token     string
	pod       types.UID
	issued    time.Time
	expires   time.Time
	expSecond int64
}

// newAPIObjects returns the objects of the node's pods, kept as strategy says; the Cache
// strategy reads an object again after half a sync period, and a watch not read for five
// sync periods stops (upstream's maxIdleTime).
func newAPIObjects(client kubernetes.Interface, caller *cluster.Caller, clk clock.PassiveClock, strategy changeDetection, syncPeriod time.Duration) *apiObjects {
	return &apiObjects{
		client: client, caller: caller, clock: clk, ttl: syncPeriod / 2, strategy: strategy, maxIdle: 5 * syncPeriod,
		watches:        map[watchKey]*objectWatch{},
		configMaps:     map[string]cached[v1.ConfigMap]{},
		secrets:        map[string]cached[v1.Secret]{},
		serviceLists:   map[string]cached[v1.ServiceList]{},
		runtimeClasses: map[string]cached[nodev1.RuntimeClass]{},
		tokens:         map[string]cachedToken{},
	}
}

var _ objectSource = (*apiObjects)(nil)

// ConfigMap returns the ConfigMap, read again from the API server when the copy is older
// than the TTL.
func (o *apiObjects) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	if o.client == nil {
		return nil, errStandalone
	}
	if o.isWatching() {
		return watchedObject(ctx, o, configMapResource, watchKey{"configmaps", namespace, name}, configMapImmutable)
	}
	return getObject(ctx, o, o.configMaps, configMapResource, namespace, name, func(ctx context.Context, opts metav1.GetOptions) (*v1.ConfigMap, error) {
		return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, opts)
	})
}

// Secret returns the Secret, as ConfigMap does.
func (o *apiObjects) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	if o.client == nil {
		return nil, errStandalone
	}
	if o.isWatching() {
		return watchedObject(ctx, o, secretResource, watchKey{"secrets", namespace, name}, secretImmutable)
	}
	return getObject(ctx, o, o.secrets, secretResource, namespace, name, func(ctx context.Context, opts metav1.GetOptions) (*v1.Secret, error) {
		return o.client.CoreV1().Secrets(namespace).Get(ctx, name, opts)
	})
}

// notFoundTTL is how long an object found missing is taken as missing: the first mount
// retry's delay.
const notFoundTTL = 500 * time.Millisecond

// callAPI makes one API call of a pod's sync through the caller (its task waits without
// blocking the loop), bounded by objectGetTimeout.
func callAPI[T any](ctx context.Context, o *apiObjects, call func(context.Context) (*T, error)) (*T, error) {
	var out *T
	err := task.Await(ctx, o.caller.Go(func(cctx context.Context) error {
		cctx, cancel := context.WithTimeout(cctx, objectGetTimeout)
		defer cancel()
		var err error
		out, err = call(cctx)
		return err
	}))
	return out, err
}

// isWatching reports whether the Watch strategy's watches serve the objects.
func (o *apiObjects) isWatching() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watching
}

// getObject serves a fresh cached copy, else reads the object (through the caller, so a
// pod sync's task waits without blocking its loop). A failed read falls back to the copy
// it has, however old, as the kubelet's caches do. The Get strategy reads it every time,
// from etcd, as upstream's simple managers do.
func getObject[T any](ctx context.Context, o *apiObjects, m map[string]cached[T], resource schema.GroupResource, namespace, name string, get func(context.Context, metav1.GetOptions) (*T, error)) (*T, error) {
	if o.strategy == getStrategy {
		obj, err := callAPI(ctx, o, func(cctx context.Context) (*T, error) { return get(cctx, metav1.GetOptions{}) })
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(resource, name)
		}
		if err == nil && o.observe != nil {
			o.observe(obj, o.clock.Now())
		}
		return obj, err
	}
	return getObjectTTL(ctx, o, m, resource, namespace, name, o.ttl, get)
}

// getObjectTTL is getObject with a TTL of its own. A refresh of an object read before asks
// for the API server's cached copy (resourceVersion "0"), as upstream's cache-based manager
// does: it spares etcd a quorum read per node and TTL, which at a thousand nodes is most of
// what the kubelets ask of it.
func getObjectTTL[T any](ctx context.Context, o *apiObjects, m map[string]cached[T], resource schema.GroupResource, namespace, name string, ttl time.Duration, get func(context.Context, metav1.GetOptions) (*T, error)) (*T, error) {
	key := namespace + "/" + name
	now := o.clock.Now()
	o.mu.Lock()
	c, ok := m[key]
	o.mu.Unlock()
	// An object found missing is read again after notFoundTTL: upstream's default (Watch)
	// managers see it the moment it is created, so a pod whose ConfigMap comes a moment
	// after it starts at its next sync, not a TTL later (and the containers of one sync
	// share one read).
	if !ok || now.Sub(c.fetched) >= ttl || (c.obj == nil && now.Sub(c.fetched) >= notFoundTTL) {
		var opts metav1.GetOptions
		if ok && c.obj != nil {
			opts.ResourceVersion = "0"
		}
		obj, err := callAPI(ctx, o, func(cctx context.Context) (*T, error) { return get(cctx, opts) })
		switch {
		case apierrors.IsNotFound(err):
			c, ok = cached[T]{fetched: now}, true
		case err != nil && !ok:
			return nil, err
		case err != nil:
			klog.FromContext(ctx).V(2).Info("Unable to read an object a pod refers to, using the last copy read", "resource", resource.Resource, "object", key, "err", err)
		default:
			c, ok = cached[T]{obj: obj, fetched: now}, true
			if o.observe != nil {
				o.observe(obj, now)
			}
		}
		o.mu.Lock()
		m[key] = c
		o.mu.Unlock()
	}
	if c.obj == nil {
		return nil, apierrors.NewNotFound(resource, name)
	}
	return c.obj, nil
}

// fetchForPods reads the ConfigMaps and Secrets pods refer to that are not cached yet. It
// runs on the API pod source's goroutine, before the pods are handed on, so that their
// containers start with them known (a sync then reads only what grew old).
func (o *apiObjects) fetchForPods(ctx context.Context, pods []*v1.Pod) {
	if o.client == nil || o.strategy == getStrategy {
		return
	}
	if o.isWatching() {
		// The Watch strategy: each object's watch starts as upstream's RegisterPod starts
		// it; the pod's sync reads it from there.
		o.mu.Lock()
		for _, pod := range pods {
			refs := podObjectRefs(pod)
			for _, name := range refs.configMaps {
				o.ensureWatchLocked(watchKey{"configmaps", pod.Namespace, name})
			}
			for _, name := range refs.secrets {
				o.ensureWatchLocked(watchKey{"secrets", pod.Namespace, name})
			}
		}
		o.mu.Unlock()
		return
	}
	now := o.clock.Now()
	for _, pod := range pods {
		refs := podObjectRefs(pod)
		for _, name := range refs.configMaps {
			fetchInto(ctx, o, o.configMaps, pod, "configMap", name, now, func(ctx context.Context) (*v1.ConfigMap, error) {
				return o.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
			})
		}
		for _, name := range refs.secrets {
			fetchInto(ctx, o, o.secrets, pod, "secret", name, now, func(ctx context.Context) (*v1.Secret, error) {
				return o.client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
			})
		}
	}
}

func fetchInto[T any](ctx context.Context, o *apiObjects, m map[string]cached[T], pod *v1.Pod, kind, name string, now time.Time, get func(context.Context) (*T, error)) {
	key := pod.Namespace + "/" + name
	o.mu.Lock()
	_, known := m[key]
	o.mu.Unlock()
	if known {
		return
	}
	getCtx, cancel := context.WithTimeout(ctx, objectGetTimeout)
	obj, err := get(getCtx)
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		obj = nil
	case err != nil:
		// The pod's sync reads it again.
		klog.FromContext(ctx).V(2).Info("Unable to read an object the pod refers to", "pod", klog.KObj(pod), kind, key, "err", err)
		return
	}
	o.mu.Lock()
	m[key] = cached[T]{obj: obj, fetched: now}
	o.mu.Unlock()
	if obj != nil && o.observe != nil {
		o.observe(obj, now)
	}
}

// prune forgets the objects no pod in pods refers to any more, and the tokens of pods not
// among them.
func (o *apiObjects) prune(pods []*v1.Pod) {
	now := o.clock.Now()
	same := o.prunedFor.same(pods)
	o.mu.Lock()
	empty := len(o.configMaps) == 0 && len(o.secrets) == 0 && len(o.tokens) == 0 && len(o.watches) == 0
	if same && len(o.watches) > 0 {
		// The same pods: only the idle watches may stop.
		o.pruneWatchesLocked(o.prunedRefs.configMaps, o.prunedRefs.secrets, now)
	}
	o.mu.Unlock()
	if empty || same {
		// Nothing cached, or the pods (objects replaced, never changed, when they change)
		// are those of the last prune: what they refer to has not changed either.
		return
	}
	o.prunedFor.set(pods)
	configMaps, secrets, uids := map[string]bool{}, map[string]bool{}, map[types.UID]bool{}
	for _, pod := range pods {
		uids[pod.UID] = true
		refs := podObjectRefs(pod)
		for _, n := range refs.configMaps {
			configMaps[pod.Namespace+"/"+n] = true
		}
		for _, n := range refs.secrets {
			secrets[pod.Namespace+"/"+n] = true
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prunedRefs.configMaps, o.prunedRefs.secrets = configMaps, secrets
	o.pruneWatchesLocked(configMaps, secrets, now)
	for k := range o.configMaps {
		if !configMaps[k] {
			delete(o.configMaps, k)
		}
	}
	for k := range o.secrets {
		if !secrets[k] {
			delete(o.secrets, k)
		}
	}
	for k, t := range o.tokens {
		if !uids[t.pod] {
			delete(o.tokens, k)
		}
	}
}

// forgetPodTokens drops the pod's tokens (upstream's DeleteServiceAccountToken, when the
// pod's volumes are torn down).
func (o *apiObjects) forgetPodTokens(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, t := range o.tokens {
		if t.pod == uid {
			delete(o.tokens, k)
		}
	}
}

// Token refresh, as the kubelet's token manager: a token is requested again once 80% of
// its lifetime passed, or after a day, whichever is first.
const (
	tokenMaxTTL = 24 * time.Hour
	// defaultTokenExpirationSeconds is the API's default of a projected token's lifetime.
	defaultTokenExpirationSeconds = 3600
)

// ServiceAccountToken returns a token of the pod's service account for the projection's
// audience and lifetime, bound to the pod, from the TokenRequest API (cached until it is due
// for refresh). A failed refresh keeps serving the old token while it is valid.
func (o *apiObjects) ServiceAccountToken(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // the ServiceAccount admission plugin's default
	}
	exp := int64(defaultTokenExpirationSeconds)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	key := fmt.Sprintf("%s/%s/%s/%d/%s", pod.Namespace, sa, strings.Join(audiences, ","), exp, pod.UID)
	now := o.clock.Now()
	o.mu.Lock()
	old, ok := o.tokens[key]
	o.mu.Unlock()
	if ok && !tokenNeedsRefresh(old, now) {
		return old.token, nil
	}
	if o.client == nil {
		return "", errors.New("failed to fetch token: cannot use TokenManager when kubelet is in standalone mode")
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	resp, err := callAPI(ctx, o, func(cctx context.Context) (*authenticationv1.TokenRequest, error) {
		return o.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(cctx, sa, req, metav1.CreateOptions{})
	})
	if err == nil && resp.Status.Token == "" {
		err = errors.New("the API server issued an empty token")
	}
	if err != nil {
		switch {
		case !ok:
			return "", fmt.Errorf("failed to fetch token: %w", err)
		case !now.Before(old.expires):
			return "", fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		}
		klog.FromContext(ctx).Error(err, "Couldn't update token", "cacheKey", key)
		return old.token, nil
	}
	expires := resp.Status.ExpirationTimestamp.Time
	if expires.IsZero() {
		expires = now.Add(time.Duration(exp) * time.Second)
	}
	o.mu.Lock()
	o.tokens[key] = cachedToken{token: resp.Status.Token, pod: pod.UID, issued: now, expires: expires, expSecond: exp}
	o.mu.Unlock()
	return resp.Status.Token, nil
}

// tokenNeedsRefresh: 80% of the token's lifetime passed, or it is a day old (upstream's
// requiresRefresh, without its jitter so that simulations replay).
func tokenNeedsRefresh(t cachedToken, now time.Time) bool {
	if now.After(t.issued.Add(tokenMaxTTL)) {
		return true
	}
	return now.After(t.expires.Add(-time.Duration(t.expSecond*20/100) * time.Second))
}

// objectRefs are the ConfigMaps and Secrets a pod refers to, by name in its namespace.
type objectRefs struct {
	configMaps, secrets []string
}

// podObjectRefs lists what the pod refers to: its volumes (projected sources included), its
// containers' env and envFrom.
func podObjectRefs(pod *v1.Pod) objectRefs {
	var r objectRefs
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.ConfigMap != nil:
			r.configMaps = append(r.configMaps, vol.ConfigMap.Name)
		case vol.Secret != nil:
			r.secrets = append(r.secrets, vol.Secret.SecretName)
		case vol.Projected != nil:
			for _, s := range vol.Projected.Sources {
				if s.ConfigMap != nil {
					r.configMaps = append(r.configMaps, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					r.secrets = append(r.secrets, s.Secret.Name)
				}
			}
		}
	}
	visit := func(c *v1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				r.configMaps = append(r.configMaps, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				r.secrets = append(r.secrets, e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				r.configMaps = append(r.configMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom.SecretKeyRef != nil {
				r.secrets = append(r.secrets, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	// The pull secrets too, as upstream's VisitPodSecretNames: they are read at each pull.
	for _, ref := range pod.Spec.ImagePullSecrets {
		r.secrets = append(r.secrets, ref.Name)
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(&c)
	}
	return r
}
