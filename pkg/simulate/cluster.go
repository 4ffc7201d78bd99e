package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// apiObject is one object of an apply step: a Pod, a ConfigMap or a Secret.
type apiObject struct {
	pod       *v1.Pod
	configMap *v1.ConfigMap
	secret    *v1.Secret
}

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decodeObjects reads a multi-document YAML of Pods, ConfigMaps and Secrets, strictly.
func decodeObjects(text string) ([]apiObject, error) {
	var out []apiObject
	for i, doc := range documentSeparator.Split(text, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var obj apiObject
		var into any
		switch {
		case meta.APIVersion == "v1" && meta.Kind == "Pod":
			obj.pod = &v1.Pod{}
			into = obj.pod
		case meta.APIVersion == "v1" && meta.Kind == "ConfigMap":
			obj.configMap = &v1.ConfigMap{}
			into = obj.configMap
		case meta.APIVersion == "v1" && meta.Kind == "Secret":
			obj.secret = &v1.Secret{}
			into = obj.secret
		default:
			return nil, fmt.Errorf("document %d: apiVersion %q kind %q: only v1 Pod, ConfigMap and Secret can be applied", i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, meta.Kind, err)
		}
		var name string
		switch {
		case obj.pod != nil:
			name = obj.pod.Name
		case obj.configMap != nil:
			name = obj.configMap.Name
		default:
			name = obj.secret.Name
		}
		if name == "" {
			return nil, fmt.Errorf("document %d (%s): metadata.name is required", i, meta.Kind)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no object")
	}
	return out, nil
}

// apiServer is the in-process API of a cluster scenario: a fake clientset whose pod
// changes are handed to the kubelet as its pod watch would, between scheduler steps.
type apiServer struct {
	client *fake.Clientset
	dirty  bool // pods changed since the kubelet last saw them
}

func newAPIServer(clk clock.PassiveClock) *apiServer {
	a := &apiServer{client: fake.NewSimpleClientset()}
	// The TokenRequest API, for projected service account token volumes (every pod of a
	// real cluster has one, kube-api-access-*): a token that names what it is for,
	// expiring when asked. The fake clientset has no subresource of its own for it.
	a.client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "token" {
			return false, nil, nil
		}
		req, ok := create.GetObject().(*authenticationv1.TokenRequest)
		if !ok {
			return false, nil, nil
		}
		out := req.DeepCopy()
		seconds := int64(3600)
		if req.Spec.ExpirationSeconds != nil {
			seconds = *req.Spec.ExpirationSeconds
		}
		sa := ""
		if n, ok := action.(interface{ GetName() string }); ok {
			sa = n.GetName()
		}
		pod := ""
		if ref := req.Spec.BoundObjectRef; ref != nil {
			pod = ref.Name
		}
		out.Status.Token = "simulated-token:" + action.GetNamespace() + "/" + sa + "/" + pod
		out.Status.ExpirationTimestamp = metav1.NewTime(clk.Now().Add(time.Duration(seconds) * time.Second))
		return true, out, nil
	})
	a.client.PrependReactor("*", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetVerb() != "get" && action.GetVerb() != "list" && action.GetVerb() != "watch" {
			a.dirty = true
		}
		return false, nil, nil
	})
	return a
}

// stableUID is the UID the in-process API gives an object: derived from its name, so runs
// repeat byte for byte.
func stableUID(kind, namespace, name string) types.UID {
	sum := sha256.Sum256([]byte(kind + "/" + namespace + "/" + name))
	return types.UID(hex.EncodeToString(sum[:16]))
}

// applyObjects creates (or updates) the objects as the API server would: namespace
// default, a UID, the creation time and, for pods, the defaults the kubelet reads.
func (s *simulation) applyObjects(ctx context.Context, objs []apiObject, now time.Time) error {
	for _, o := range objs {
		switch {
		case o.pod != nil:
			p := o.pod.DeepCopy()
			if p.Namespace == "" {
				p.Namespace = metav1.NamespaceDefault
			}
			defaultPod(p)
			pods := s.api.client.CoreV1().Pods(p.Namespace)
			old, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				p.UID = stableUID("Pod", p.Namespace, p.Name)
				p.CreationTimestamp = metav1.NewTime(now)
				p.Generation = 1
				p.Status = v1.PodStatus{Phase: v1.PodPending}
				if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
					return err
				}
				s.obs.line(now, "api", "created pod "+p.Namespace+"/"+p.Name)
			case err != nil:
				return err
			default:
				p.UID, p.CreationTimestamp, p.Status = old.UID, old.CreationTimestamp, old.Status
				// The API server counts changes of the spec (a resize among them).
				p.Generation = old.Generation
				if !apiequality.Semantic.DeepEqual(&p.Spec, &old.Spec) {
					p.Generation++
				}
				if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					return err
				}
				s.obs.line(now, "api", "updated pod "+p.Namespace+"/"+p.Name)
			}
		case o.configMap != nil:
			cm := o.configMap.DeepCopy()
			namespaceAndUID(&cm.ObjectMeta, "ConfigMap")
			cms := s.api.client.CoreV1().ConfigMaps(cm.Namespace)
			if err := createOrUpdate(ctx, cm, cms.Get, cms.Create, cms.Update); err != nil {
				return err
			}
			s.obs.line(now, "api", "applied configmap "+cm.Namespace+"/"+cm.Name)
		case o.secret != nil:
			sec := o.secret.DeepCopy()
			namespaceAndUID(&sec.ObjectMeta, "Secret")
			secrets := s.api.client.CoreV1().Secrets(sec.Namespace)
			if err := createOrUpdate(ctx, sec, secrets.Get, secrets.Create, secrets.Update); err != nil {
				return err
			}
			s.obs.line(now, "api", "applied secret "+sec.Namespace+"/"+sec.Name)
		}
	}
	return nil
}

// namespaceAndUID gives an applied object the namespace default unless it has one, and its
// stable UID.
func namespaceAndUID(m *metav1.ObjectMeta, kind string) {
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
	m.UID = stableUID(kind, m.Namespace, m.Name)
}

// createOrUpdate creates obj in the in-process API, or replaces the object of its name.
func createOrUpdate[T interface{ GetName() string }](ctx context.Context, obj T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	var err error
	if _, err = get(ctx, obj.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = create(ctx, obj, metav1.CreateOptions{})
	} else {
		_, err = update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
}

// defaultPod fills what the API server's defaulting would and the kubelet reads.
func defaultPod(p *v1.Pod) {
	if p.Spec.RestartPolicy == "" {
		p.Spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if p.Spec.TerminationGracePeriodSeconds == nil {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		p.Spec.TerminationGracePeriodSeconds = &grace
	}
	if p.Spec.DNSPolicy == "" {
		p.Spec.DNSPolicy = v1.DNSClusterFirst
	}
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = v1.DefaultSchedulerName
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = v1.PullIfNotPresent
		}
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = v1.TerminationMessageReadFile
		}
	}
}

// deleteObjects deletes as kubectl delete: a pod bound to a node that is not terminal is
// marked deleted with its grace period (the kubelet stops it, then removes it with grace
// 0); anything else goes at once.
func (s *simulation) deleteObjects(ctx context.Context, refs []ObjectRef, now time.Time) error {
	for _, ref := range refs {
		ns := ref.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		switch ref.Kind {
		case "ConfigMap":
			if err := s.api.client.CoreV1().ConfigMaps(ns).Delete(ctx, ref.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		case "Secret":
			if err := s.api.client.CoreV1().Secrets(ns).Delete(ctx, ref.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		case "Pod":
			pods := s.api.client.CoreV1().Pods(ns)
			p, err := pods.Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			terminal := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
			if p.Spec.NodeName == "" || terminal {
				if err := pods.Delete(ctx, ref.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
			} else if p.DeletionTimestamp == nil {
				grace := *p.Spec.TerminationGracePeriodSeconds
				at := metav1.NewTime(now.Add(cri.Seconds(grace)))
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &at, &grace
				if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
		}
		s.obs.line(now, "api", "deleted "+strings.ToLower(ref.Kind)+" "+ns+"/"+ref.Name)
	}
	return nil
}

// syncAPIPods hands the kubelet the pods bound to its node, when they changed, as the pod
// watch of the daemon does.
func (s *simulation) syncAPIPods(ctx context.Context) {
	if s.api == nil || !s.api.dirty || !s.running {
		return
	}
	s.api.dirty = false
	list, err := s.api.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var pods []*v1.Pod
	for i := range list.Items {
		if list.Items[i].Spec.NodeName == s.cfg.Simulator.NodeName {
			pods = append(pods, list.Items[i].DeepCopy())
		}
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	s.k.UpdateAPIPods(ctx, pods)
}

// --- expectations on the in-process API ---

func splitName(name string) (string, string) {
	if ns, n, ok := strings.Cut(name, "/"); ok {
		return ns, n
	}
	return metav1.NamespaceDefault, name
}

func describeAPIPod(p *APIPodExpect) string {
	out := "apiPod " + p.Name
	if p.Phase != "" {
		out += " phase=" + p.Phase
	}
	if p.Reason != "" {
		out += " reason=" + p.Reason
	}
	if p.MessageContains != "" {
		out += fmt.Sprintf(" message~%q", p.MessageContains)
	}
	if p.Ready != nil {
		out += fmt.Sprintf(" ready=%t", *p.Ready)
	}
	if c := p.Condition; c != nil {
		out += " " + c.Type + "=" + c.Status
		if c.Reason != "" {
			out += " reason=" + c.Reason
		}
	}
	return out
}

func (s *simulation) checkAPIPod(e *APIPodExpect) (bool, string) {
	ns := e.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	p, err := s.api.client.CoreV1().Pods(ns).Get(context.Background(), e.Name, metav1.GetOptions{})
	if err != nil {
		return false, "no pod " + ns + "/" + e.Name + " in the API"
	}
	st := &p.Status
	ok := (e.Phase == "" || string(st.Phase) == e.Phase) && (e.Reason == "" || st.Reason == e.Reason) &&
		(e.MessageContains == "" || strings.Contains(st.Message, e.MessageContains)) &&
		(e.Ready == nil || podReady(st) == *e.Ready)
	var cond string
	if c := e.Condition; c != nil {
		found := false
		for _, pc := range st.Conditions {
			if string(pc.Type) == c.Type {
				found = true
				cond = fmt.Sprintf(" %s=%s reason=%s", pc.Type, pc.Status, pc.Reason)
				ok = ok && string(pc.Status) == c.Status && (c.Reason == "" || pc.Reason == c.Reason)
			}
		}
		ok = ok && found
	}
	return ok, fmt.Sprintf("phase=%s reason=%s message=%q ready=%t%s", st.Phase, st.Reason, st.Message, podReady(st), cond)
}

func (s *simulation) checkAPINode(n *NodeExpect) (bool, string) {
	node, err := s.api.client.CoreV1().Nodes().Get(context.Background(), s.cfg.Simulator.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, "no node " + s.cfg.Simulator.NodeName + " in the API"
	}
	return matchNodeCondition(node.Status.Conditions, n)
}

func (s *simulation) checkAPILease(l *APILeaseExpect) (bool, string) {
	lease, err := s.api.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), s.cfg.Simulator.NodeName, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		return false, "no lease in the API"
	}
	age := s.clock.Since(lease.Spec.RenewTime.Time)
	return age <= l.RenewedWithin.Duration, "renewed " + age.String() + " ago"
}

func (s *simulation) checkAbsentAPIPod(name string) (bool, string) {
	ns, n := splitName(name)
	p, err := s.api.client.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		return true, ""
	}
	return false, fmt.Sprintf("pod %s/%s in the API, phase=%s", ns, n, p.Status.Phase)
}
