package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// The cluster's networks, as kubeadm's defaults but for the service range, kept small.
const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"  // the kubernetes Service
	clusterDNS  = "10.0.0.10" // written into pods' resolv.conf; nothing answers there
)

// bootstrapTokenID and its secret are the cluster's bootstrap token, which the nodes join
// with (TLS bootstrap); it never leaves the state directory.
const bootstrapTokenID = "mkubel"

// Options configure Create.
type Options struct {
	// Name is the cluster's name (default "minikubelet"), its nodes <name>-worker[-i].
	Name string
	// Nodes is how many minikubelet nodes join (default 1), in one process.
	Nodes int
	// BinDir, when set, is searched first for kube-apiserver, kube-controller-manager and
	// kube-scheduler; then PATH, then ./_output/<release>/bin and ./_output/bin (make
	// controlplane [KUBE_VERSION=...]). etcd comes from BinDir or PATH (Debian: etcd-server).
	BinDir string
	// KubernetesVersion, when set (v1.35, 1.35 or v1.35.4), is the release the control
	// plane must be: the first programs of that minor found are taken, and the nodes
	// emulate it. Unset, the first found are taken and the nodes emulate their release
	// (the newest minikubelet has, if they are newer).
	KubernetesVersion string
	// Root is where clusters keep their state (default: the user's cache directory,
	// minikubelet/clusters).
	Root string
	// Self is the minikubelet binary the nodes run.
	Self string
	// APIPort is the API server's port on 127.0.0.1; 0 picks a free one.
	APIPort int
	// Out receives the progress lines.
	Out io.Writer
	// Clock times the waits.
	Clock clock.Clock
	// Timeout bounds each wait (default 2m).
	Timeout time.Duration
}

// State is what a cluster's directory records (cluster.json).
type State struct {
	Name       string   `json:"name"`
	Server     string   `json:"server"`
	Kubeconfig string   `json:"kubeconfig"`
	Nodes      []string `json:"nodes"`
	// ControlPlaneVersion is what kube-apiserver --version says; NodeVersion the kubelet
	// release the nodes emulate.
	ControlPlaneVersion string    `json:"controlPlaneVersion,omitempty"`
	NodeVersion         string    `json:"nodeVersion,omitempty"`
	Created             time.Time `json:"created"`
	// Processes are the cluster's processes by component, as started.
	Processes map[string]int `json:"processes"`
}

// DefaultRoot is where clusters live unless Options.Root says otherwise.
func DefaultRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user's cache directory for the clusters' state: %w", err)
	}
	return filepath.Join(dir, "minikubelet", "clusters"), nil
}

// component is one process of the cluster.
type component struct {
	name string
	path string
	args []string
}

// Create starts a cluster: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler on 127.0.0.1 with a CA and certificates of their own, a bootstrap token,
// then the minikubelet nodes, which join by TLS bootstrap, each with its own
// system:node:<name> certificate. It returns once every node is Ready, having written an
// admin kubeconfig. If a step fails, what was started is stopped.
func Create(ctx context.Context, o Options) (st *State, err error) {
	if o.Name == "" {
		o.Name = "minikubelet"
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("--wait %v: must not be negative", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Clock == nil {
		return nil, errors.New("localcluster: Options.Clock is required")
	}
	if err := validName(o.Name); err != nil {
		return nil, err
	}
	if o.Nodes < 1 || o.Nodes > 1000 {
		return nil, fmt.Errorf("--nodes %d: must be from 1 to 1000", o.Nodes)
	}
	if o.Root == "" {
		if o.Root, err = DefaultRoot(); err != nil {
			return nil, err
		}
	}
	var want release.Release
	if o.KubernetesVersion != "" {
		if want, err = parseKubernetesVersion(o.KubernetesVersion); err != nil {
			return nil, err
		}
	}
	bins, cpVersion, err := findBinaries(ctx, o.BinDir, want)
	if err != nil {
		return nil, err
	}
	nodes, note, err := nodeRelease(cpVersion, want)
	if err != nil {
		return nil, err
	}
	if o.APIPort != 0 {
		if err := portFree(o.APIPort); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(o.Root, o.Name)
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("cluster %q exists (%s): delete it first with `minikubelet cluster delete --name %s`", o.Name, dir, o.Name)
	}
	for _, d := range []string{"logs", "etcd", "manifests"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("cluster state directory: %w", err)
		}
	}
	start := o.Clock.Now()
	st = &State{Name: o.Name, Created: start.UTC(), Processes: map[string]int{}, Kubeconfig: filepath.Join(dir, "kubeconfig"),
		ControlPlaneVersion: cpVersion, NodeVersion: nodes.String()}
	defer func() {
		// What was started stops; the directory stays, for its logs, until `cluster delete`.
		if err != nil {
			_ = stopProcesses(dir, st.Processes, o.Clock, nil)
			err = fmt.Errorf("%w\nEverything started was stopped; the logs are in %s (remove them with `minikubelet cluster delete --name %s`)",
				err, filepath.Join(dir, "logs"), o.Name)
		}
	}()
	step := func(format string, args ...any) {
		fmt.Fprintf(o.Out, " • "+format+"\n", args...)
	}
	done := func(what string, since time.Time) {
		fmt.Fprintf(o.Out, " ✓ %s (%.1fs)\n", what, o.Clock.Since(since).Seconds())
	}

	step("control plane %s (%s); nodes: kubelet %s%s", cpVersion, filepath.Dir(bins["kube-apiserver"]), nodes.KubeletVersion(), note)
	t := o.Clock.Now()
	p, err := newPKI(dir, t)
	if err != nil {
		return st, fmt.Errorf("certificates: %w", err)
	}
	done("certificates (CA, API server, admin, service accounts)", t)

	apiPort := o.APIPort
	ports, err := freePorts(5, apiPort)
	if err != nil {
		return st, err
	}
	if apiPort == 0 {
		apiPort = ports[0]
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	st.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	token := bootstrapTokenID + "." + randomHex(8)

	comps := []component{
		{"etcd", bins["etcd"], []string{"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(ports[2]),
			"--initial-advertise-peer-urls", "http://127.0.0.1:" + strconv.Itoa(ports[2]),
			"--initial-cluster", "default=http://127.0.0.1:" + strconv.Itoa(ports[2])}},
		{"kube-apiserver", bins["kube-apiserver"], []string{"--etcd-servers", etcdURL,
			// The v1.37 API server refuses a loopback advertise address with an
			// endpoint reconciler: on loopback, no endpoints for the kubernetes Service.
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
			"--secure-port", strconv.Itoa(apiPort),
			"--tls-cert-file", p.serverCert, "--tls-private-key-file", p.serverKey, "--client-ca-file", p.caCert,
			"--enable-bootstrap-token-auth", "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
			"--service-account-key-file", p.saPub, "--service-account-signing-key-file", p.saKey,
			"--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", serviceCIDR,
			"--allow-privileged=true", "--kubelet-client-certificate", p.kubeletClientCert, "--kubelet-client-key", p.kubeletClientKey,
			"--kubelet-preferred-address-types", "InternalIP",
			"--cert-dir", filepath.Join(dir, "pki", "apiserver-generated")}},
	}
	adminKubeconfig := st.Kubeconfig
	if err := writeKubeconfig(adminKubeconfig, o.Name, st.Server, p.caPEM, "kubernetes-admin", clientcmdapi.AuthInfo{
		ClientCertificateData: p.adminPEM, ClientKeyData: p.adminK}); err != nil {
		return st, err
	}
	controllers := []component{
		{"kube-controller-manager", bins["kube-controller-manager"], []string{"--kubeconfig", adminKubeconfig,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[3]), "--leader-elect=false",
			"--use-service-account-credentials=true", "--controllers", "*",
			"--root-ca-file", p.caCert, "--service-account-private-key-file", p.saKey,
			"--cluster-signing-cert-file", p.caCert, "--cluster-signing-key-file", p.caKey,
			"--authentication-kubeconfig", adminKubeconfig, "--authorization-kubeconfig", adminKubeconfig}},
		{"kube-scheduler", bins["kube-scheduler"], []string{"--kubeconfig", adminKubeconfig,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[4]), "--leader-elect=false",
			"--authentication-kubeconfig", adminKubeconfig, "--authorization-kubeconfig", adminKubeconfig}},
	}

	for _, c := range comps {
		if err := startProcess(dir, c, st); err != nil {
			return st, err
		}
	}
	rest, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		return st, err
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return st, err
	}
	t = o.Clock.Now()
	step("waiting for etcd and kube-apiserver on %s", st.Server)
	if err := o.wait(ctx, dir, st, "kube-apiserver /readyz", func() (bool, string) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", strings.TrimSpace(string(body) + " " + errString(err))
	}); err != nil {
		return st, err
	}
	done("etcd and kube-apiserver", t)
	for _, c := range controllers {
		if err := startProcess(dir, c, st); err != nil {
			return st, err
		}
	}
	id, secret, _ := strings.Cut(token, ".")
	if err := BootstrapToken(ctx, client, id, secret); err != nil {
		return st, fmt.Errorf("bootstrap token and RBAC: %w", err)
	}
	step("kube-controller-manager and kube-scheduler started; bootstrap token %s", bootstrapTokenID)

	// The nodes: one minikubelet process, each node bootstrapping its own identity.
	bootstrapConf := filepath.Join(dir, "bootstrap-kubelet.conf")
	if err := writeKubeconfig(bootstrapConf, o.Name, st.Server, p.caPEM, "tls-bootstrap-token-user", clientcmdapi.AuthInfo{Token: token}); err != nil {
		return st, err
	}
	base := o.Name + "-worker"
	args := []string{"--bootstrap-kubeconfig", bootstrapConf, "--kubeconfig", filepath.Join(dir, "kubelet.conf"),
		"--cert-dir", filepath.Join(dir, "nodes"), "--rotate-certificates", "--hostname-override", base,
		"--port", "0", "--read-only-port", "0", "--pod-manifest-path", filepath.Join(dir, "manifests"),
		"--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook", "--client-ca-file", p.caCert,
		"--cluster-dns", clusterDNS, "--cluster-domain", "cluster.local", "--emulated-version", nodes.String()}
	st.Nodes = []string{base}
	if o.Nodes > 1 {
		args = append(args, "--node-count", strconv.Itoa(o.Nodes))
		st.Nodes = nil
		for i := 0; i < o.Nodes; i++ {
			st.Nodes = append(st.Nodes, fmt.Sprintf("%s-%d", base, i))
		}
	}
	if err := startProcess(dir, component{"minikubelet", o.Self, args}, st); err != nil {
		return st, err
	}
	t = o.Clock.Now()
	step("waiting for %d node(s) to join and be Ready", o.Nodes)
	if err := o.wait(ctx, dir, st, "every node Ready", func() (bool, string) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range list.Items {
			for _, c := range list.Items[i].Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == o.Nodes, fmt.Sprintf("%d of %d Ready", ready, o.Nodes)
	}); err != nil {
		return st, err
	}
	done(fmt.Sprintf("%d node(s) Ready", o.Nodes), t)
	if err := writeState(dir, st); err != nil {
		return st, err
	}
	fmt.Fprintf(o.Out, "Cluster %q is up in %.1fs. Use it with:\n  export KUBECONFIG=%s\n  kubectl get nodes\nDelete it with: minikubelet cluster delete --name %s\n",
		o.Name, o.Clock.Since(start).Seconds(), st.Kubeconfig, o.Name)
	return st, nil
}

// wait polls cond every 250ms until it holds, a process of the cluster exits (an error with
// its log's end), ctx ends, or the timeout passes.
func (o Options) wait(ctx context.Context, dir string, st *State, what string, cond func() (bool, string)) error {
	deadline := o.Clock.Now().Add(o.Timeout)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return nil
		}
		last = detail
		for name, pid := range st.Processes {
			if !alive(pid) {
				return fmt.Errorf("%s exited while waiting for %s; the end of its log (%s):\n%s", name, what,
					logPath(dir, name), tail(logPath(dir, name), 15))
			}
		}
		if o.Clock.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s: %s", o.Timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.Clock.After(250 * time.Millisecond):
		}
	}
}

// Delete stops every process of the cluster (SIGTERM, then SIGKILL after 15s) and removes
// its state directory.
func Delete(root, name string, clk clock.Clock, out io.Writer) error {
	if err := validName(name); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("no cluster %q (in %s)", name, root)
		}
		st = &State{Processes: pidFiles(dir)}
	} else if err != nil {
		return err
	}
	if err := stopProcesses(dir, st.Processes, clk, out); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	fmt.Fprintf(out, "Deleted cluster %q\n", name)
	return nil
}

// Status is a cluster as `cluster list` shows it.
type Status struct {
	State
	Running int // processes alive
}

// List returns the clusters under root, by name.
func List(root string) ([]Status, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		st, err := readState(filepath.Join(root, e.Name()))
		if err != nil {
			st = &State{Name: e.Name(), Processes: pidFiles(filepath.Join(root, e.Name()))}
		}
		s := Status{State: *st}
		for _, pid := range st.Processes {
			if alive(pid) {
				s.Running++
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// startProcess starts a component detached from the command (its own session), its output
// in logs/<name>.log and its PID in pids/<name>, so that it outlives `cluster create`.
func startProcess(dir string, c component, st *State) error {
	logFile, err := os.Create(logPath(dir, c.name))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(c.path, c.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s (%s): %w", c.name, c.path, err)
	}
	st.Processes[c.name] = cmd.Process.Pid
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pids", c.name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// stopProcesses stops the processes, nodes first and etcd last, and waits for them to exit.
// A PID whose process no longer runs one of the cluster's commands (its command line does
// not name the cluster's directory) is left alone.
func stopProcesses(dir string, procs map[string]int, clk clock.Clock, out io.Writer) error {
	order := []string{"minikubelet", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}
	for _, name := range order {
		pid, ok := procs[name]
		if !ok || !alive(pid) || !ours(pid, dir) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := clk.Now().Add(15 * time.Second)
		for alive(pid) && clk.Now().Before(deadline) {
			<-clk.After(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			for i := 0; alive(pid) && i < 50; i++ {
				<-clk.After(100 * time.Millisecond)
			}
		}
		if alive(pid) {
			return fmt.Errorf("%s (pid %d) does not exit", name, pid)
		}
		if out != nil {
			fmt.Fprintf(out, " ✓ stopped %s\n", name)
		}
	}
	return nil
}

// alive reports whether the process runs (a zombie of ours does not count).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust the signal
	}
	// pid (comm) S ...: the state follows the last ')'.
	if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z' && data[i+2] != 'X'
	}
	return true
}

// ours reports whether pid's command line names dir (every process of the cluster's does).
func ours(pid int, dir string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true // no /proc: the PID file is all there is
	}
	return strings.Contains(string(data), dir+string(filepath.Separator))
}

func pidFiles(dir string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(filepath.Join(dir, "pids"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil {
			out[e.Name()] = pid
		}
	}
	return out
}

func logPath(dir, name string) string { return filepath.Join(dir, "logs", name+".log") }

// tail is the last n lines of a file.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func writeState(dir string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cluster.json"), append(data, '\n'), 0o600)
}

func readState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "cluster.json"), err)
	}
	return &st, nil
}

// writeKubeconfig writes a kubeconfig for server, trusting ca, as user.
func writeKubeconfig(path, cluster, server string, ca []byte, user string, auth clientcmdapi.AuthInfo) error {
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{cluster: {Server: server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: &auth},
		Contexts:       map[string]*clientcmdapi.Context{cluster: {Cluster: cluster, AuthInfo: user}},
		CurrentContext: cluster,
	}
	return clientcmd.WriteToFile(kc, path)
}

// BootstrapToken creates the bootstrap token id.secret and what kubeadm binds for TLS
// bootstrap: the token's group (system:bootstrappers:kubeadm:default-node-token) may create
// CSRs, which are approved; nodes' renewals are approved.
func BootstrapToken(ctx context.Context, client kubernetes.Interface, id, secret string) error {
	group := "system:bootstrappers:kubeadm:default-node-token"
	if _, err := client.CoreV1().Secrets("kube-system").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing": "true", "auth-extra-groups": group, "description": "minikubelet cluster create: the nodes' TLS bootstrap"},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	bindings := []struct{ name, role, group string }{
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	}
	for _, b := range bindings {
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: b.group}},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// controlPlanePrograms are the programs of a release that must agree on it.
var controlPlanePrograms = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// findBinaries finds the control plane's programs: for each, the first of BinDir, PATH,
// ./_output/<want>/bin and ./_output/bin that has it (of release want, if set: each is
// asked its --version); etcd from BinDir, then PATH. It returns them and the version
// kube-apiserver reports.
func findBinaries(ctx context.Context, binDir string, want release.Release) (map[string]string, string, error) {
	out := map[string]string{}
	var missing []string
	executable := func(p string) string {
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
		return ""
	}
	// Where make controlplane [KUBE_VERSION=...] writes.
	var built []string
	if !want.IsZero() && want != release.Newest() {
		built = append(built, filepath.Join("_output", "v"+want.String(), "bin"))
	}
	built = append(built, filepath.Join("_output", "bin"))
	versions := map[string]string{}
	var wrong []string
	for _, name := range append([]string{"etcd"}, controlPlanePrograms...) {
		var candidates []string
		if binDir != "" {
			candidates = append(candidates, executable(filepath.Join(binDir, name)))
		}
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
		if name != "etcd" {
			for _, d := range built {
				candidates = append(candidates, executable(filepath.Join(d, name)))
			}
		}
		for _, p := range candidates {
			if p == "" {
				continue
			}
			if name == "etcd" {
				out[name] = p
				break
			}
			v, err := programVersion(ctx, p)
			if err != nil {
				return nil, "", err
			}
			if !want.IsZero() && !releaseIs(v, want) {
				wrong = append(wrong, fmt.Sprintf("%s is %s", p, v))
				continue
			}
			out[name], versions[name] = p, v
			break
		}
		if out[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		// One release: the three, found apart (another directory, PATH), must agree.
		var seen []string
		minors := map[string]bool{}
		for _, name := range controlPlanePrograms {
			seen = append(seen, fmt.Sprintf("%s %s (%s)", name, versions[name], out[name]))
			minors[minorOf(versions[name])] = true
		}
		if len(minors) > 1 {
			return nil, "", fmt.Errorf("the control plane's programs are of different releases: %s; pass --bin-dir with one release's, or --kubernetes-version",
				strings.Join(seen, ", "))
		}
		return out, versions["kube-apiserver"], nil
	}
	var hints []string
	build, where := "`make controlplane`", "--bin-dir, PATH or ./_output/bin"
	if !want.IsZero() {
		build = fmt.Sprintf("`make controlplane KUBE_VERSION=v%s`", want)
		if want != release.Newest() {
			where = fmt.Sprintf("--bin-dir, PATH, ./_output/v%s/bin or ./_output/bin", want)
		}
	}
	for _, m := range missing {
		if m == "etcd" {
			hints = append(hints, "etcd: not in --bin-dir or PATH; install it (Debian and Ubuntu: apt-get install etcd-server)")
		} else if want.IsZero() {
			hints = append(hints, fmt.Sprintf("%s: not in %s; build it with %s or pass --bin-dir", m, where, build))
		} else {
			hints = append(hints, fmt.Sprintf("%s of Kubernetes %s: not in %s; build it with %s or pass --bin-dir", m, want, where, build))
		}
	}
	if len(wrong) > 0 {
		hints = append(hints, "of other releases: "+strings.Join(wrong, "; "))
	}
	return nil, "", errors.New("missing programs:\n  " + strings.Join(hints, "\n  "))
}

// versionLine is what a Kubernetes program's --version prints: "Kubernetes v1.37.2".
var versionLine = regexp.MustCompile(`^Kubernetes (v\S+)\s*$`)

// programVersion asks a control plane program its version.
func programVersion(ctx context.Context, path string) (string, error) {
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	m := versionLine.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return "", fmt.Errorf("%s --version: %q, want \"Kubernetes vX.Y.Z\"", path, strings.TrimSpace(string(out)))
	}
	return m[1], nil
}

// releaseIs reports whether a program's version is of release r. A build without the
// release's stamp (v0.0.0-master) is of none.
func releaseIs(v string, r release.Release) bool {
	parsed, err := version.ParseGeneric(v)
	return err == nil && parsed.Major() == 1 && int(parsed.Minor()) == r.Minor()
}

// minorOf is a program's major.minor ("1.37"), or its whole version where it has none.
func minorOf(v string) string {
	parsed, err := version.ParseGeneric(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("%d.%d", parsed.Major(), parsed.Minor())
}

// parseKubernetesVersion reads --kubernetes-version: v1.35, 1.35 or v1.35.4.
func parseKubernetesVersion(s string) (release.Release, error) {
	v, err := version.ParseGeneric(s)
	if err != nil {
		return release.Release{}, fmt.Errorf("invalid --kubernetes-version %q: want a release as v1.35 or v1.35.4", s)
	}
	r, err := release.Parse(fmt.Sprintf("%d.%d", v.Major(), v.Minor()))
	if err != nil {
		return release.Release{}, fmt.Errorf("invalid --kubernetes-version %q: %w", s, err)
	}
	return r, nil
}

// nodeRelease is the kubelet release the nodes emulate: want if set; else the control
// plane's, or the newest a node can be when the control plane is newer (a kubelet may be
// older than its API server, never newer). note says why, when it is not the control
// plane's own release.
func nodeRelease(cpVersion string, want release.Release) (r release.Release, note string, err error) {
	if !want.IsZero() {
		return want, "", nil
	}
	v, err := version.ParseGeneric(cpVersion)
	if err != nil || v.Major() == 0 {
		return release.Newest(), " (the control plane reports no release: built without its version stamp)", nil
	}
	if v.Major() == 1 && int(v.Minor()) > release.Newest().Minor() {
		return release.Newest(), " (the newest minikubelet emulates; kubelets may be older than the API server)", nil
	}
	r, err = release.Parse(fmt.Sprintf("%d.%d", v.Major(), v.Minor()))
	if err != nil {
		return release.Release{}, "", fmt.Errorf("control plane %s: a kubelet may not be newer than its API server, and minikubelet emulates kubelets %s to %s: pass --kubernetes-version or --bin-dir with a newer control plane",
			cpVersion, release.Oldest(), release.Newest())
	}
	return r, "", nil
}

// freePorts returns n ports free on 127.0.0.1 now, none of them except.
func freePorts(n, except int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		lns = append(lns, ln)
		if port := ln.Addr().(*net.TCPAddr).Port; port != except {
			out = append(out, port)
		} else {
			i--
		}
	}
	return out, nil
}

// portFree checks that port is free on 127.0.0.1, naming it when it is not.
func portFree(port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("--api-port %d: 127.0.0.1:%d is in use (%v); free it or pass --api-port 0 to pick a free port", port, port, err)
	}
	return ln.Close()
}

func validName(name string) error {
	if name == "" || len(name) > 40 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("--name %q: a cluster name is up to 40 lower-case letters, digits and '-', not starting or ending with '-'", name)
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // the system's randomness failed
	}
	return hex.EncodeToString(b)
}
