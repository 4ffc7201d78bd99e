package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
)

// TestMakeMounts: a container's mounts: its volumeMounts from the volumes' node paths
// (subPath inside, read-only as asked and always for configMap, secret, downwardAPI and
// projected), then /etc/hosts, /etc/hostname and /etc/resolv.conf from the pod's files.
func TestMakeMounts(t *testing.T) {
	vols := []v1.Volume{
		{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "logs", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log/app"}}},
		{Name: "kitten", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.k8s.io/e2e-test-images/kitten:1.8"}}},
	}
	// The image volumes the runtime manager pulled.
	kitten := cri.ImageSpec{Image: "registry.k8s.io/e2e-test-images/kitten:1.8"}
	imageVolumes := kuberuntime.ImageVolumes{"kitten": kitten}
	podDir := "/var/lib/kubelet/pods/uid-web"
	hosts := cri.Mount{ContainerPath: "/etc/hosts", HostPath: podDir + "/etc-hosts"}
	hostname := cri.Mount{ContainerPath: "/etc/hostname", HostPath: podDir + "/hostname"}
	resolv := cri.Mount{ContainerPath: "/etc/resolv.conf", HostPath: podDir + "/resolv.conf"}
	tests := []struct {
		name    string
		mounts  []v1.VolumeMount
		env     []cri.KeyValue
		ro      bool // readOnlyRootFilesystem
		want    []cri.Mount
		images  []cri.ImageMount
		wantErr string
	}{{
		name: "volumes, then the pod's files",
		mounts: []v1.VolumeMount{
			{Name: "conf", MountPath: "/etc/app"},
			{Name: "scratch", MountPath: "/tmp/work", ReadOnly: true},
			{Name: "logs", MountPath: "/var/log"},
		},
		want: []cri.Mount{
			{ContainerPath: "/etc/app", HostPath: podDir + "/volumes/kubernetes.io~configmap/conf", Readonly: true},
			{ContainerPath: "/tmp/work", HostPath: podDir + "/volumes/kubernetes.io~empty-dir/scratch", Readonly: true},
			{ContainerPath: "/var/log", HostPath: "/var/log/app"},
			hosts, hostname, resolv,
		},
	}, {
		name:   "subPath of a configMap key, and subPathExpr",
		mounts: []v1.VolumeMount{{Name: "conf", MountPath: "/etc/mode", SubPath: "mode"}, {Name: "scratch", MountPath: "/data", SubPathExpr: "$(POD_NAME)/data"}},
		env:    []cri.KeyValue{{Key: "POD_NAME", Value: "web"}},
		want: []cri.Mount{
			{ContainerPath: "/etc/mode", HostPath: podDir + "/volumes/kubernetes.io~configmap/conf/mode", Readonly: true},
			{ContainerPath: "/data", HostPath: podDir + "/volumes/kubernetes.io~empty-dir/scratch/web/data"},
			hosts, hostname, resolv,
		},
	}, {
		name:   "the container's own /etc/hosts and resolv.conf win; a read-only root makes the runtime's files read-only",
		mounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/etc/hosts", SubPath: "hosts"}, {Name: "scratch", MountPath: "/etc/resolv.conf", SubPath: "resolv"}},
		ro:     true,
		want: []cri.Mount{
			{ContainerPath: "/etc/hosts", HostPath: podDir + "/volumes/kubernetes.io~empty-dir/scratch/hosts"},
			{ContainerPath: "/etc/resolv.conf", HostPath: podDir + "/volumes/kubernetes.io~empty-dir/scratch/resolv"},
			{ContainerPath: "/etc/hostname", HostPath: podDir + "/hostname", Readonly: true},
		},
	}, {
		name: "image volumes, whole and a subPathExpr of one, for the runtime to mount; the container's /etc/hosts is one",
		mounts: []v1.VolumeMount{
			{Name: "kitten", MountPath: "/volume"},
			{Name: "kitten", MountPath: "volume-etc", SubPathExpr: "$(DIR)"},
			{Name: "kitten", MountPath: "/etc/hosts", SubPath: "etc/hosts"},
		},
		env:    []cri.KeyValue{{Key: "DIR", Value: "etc"}},
		want:   []cri.Mount{hostname, resolv},
		images: []cri.ImageMount{{ContainerPath: "/volume", Image: kitten}, {ContainerPath: "/volume-etc", Image: kitten, SubPath: "etc"}, {ContainerPath: "/etc/hosts", Image: kitten, SubPath: "etc/hosts"}},
	}, {
		name:    "an image volume's subPath going up",
		mounts:  []v1.VolumeMount{{Name: "kitten", MountPath: "/x", SubPath: "etc/../.."}},
		wantErr: "unable to provision SubPath `etc/../..`: must not contain '..'",
	}, {
		name:    "an image volume's absolute subPath",
		mounts:  []v1.VolumeMount{{Name: "kitten", MountPath: "/x", SubPath: "/etc"}},
		wantErr: "error SubPath `/etc` must not be an absolute path",
	}, {
		name:    "subPath going up",
		mounts:  []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "a/../../etc"}},
		wantErr: "unable to provision SubPath `a/../../etc`: must not contain '..'",
	}, {
		name:    "absolute subPath",
		mounts:  []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "/etc"}},
		wantErr: "error SubPath `/etc` must not be an absolute path",
	}, {
		name:    "subPathExpr with an unset variable",
		mounts:  []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPathExpr: "$(NOPE)/$(ALSO)"}},
		wantErr: "missing value for ALSO, NOPE",
	}, {
		name:    "a volume the pod does not have",
		mounts:  []v1.VolumeMount{{Name: "ghost", MountPath: "/x"}},
		wantErr: `cannot find volume "ghost" to mount into container "app"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, false, configMap("shop", "settings", map[string]string{"mode": "blue"}))
			pod := volumePod(vols...)
			c := &pod.Spec.Containers[0]
			if err := u.preparePod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			c.VolumeMounts = tt.mounts
			if tt.ro {
				c.SecurityContext = &v1.SecurityContext{ReadOnlyRootFilesystem: boolp(true)}
			}
			got, images, err := u.makeMounts(pod, c, tt.env, []string{"10.88.0.7"}, imageVolumes)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("makeMounts error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("makeMounts: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.images, images); diff != "" {
				t.Errorf("image mounts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSubPathEscapingThroughALink: a subPath that leads out of its volume through a
// symbolic link (a container can make one in an emptyDir) is refused, as upstream.
func TestSubPathEscapingThroughALink(t *testing.T) {
	u := newUnitKubelet(t, true)
	pod := volumePod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	if err := u.preparePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	dir := volumeHostPath(pod, &pod.Spec.Volumes[0])
	if err := u.nodeFS.Symlink("/etc", dir+"/out"); err != nil {
		t.Fatal(err)
	}
	if err := u.nodeFS.Symlink("sub", dir+"/in"); err != nil {
		t.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "out"}}
	if _, _, err := u.makeMounts(pod, c, nil, nil, nil); err == nil || err.Error() != `failed to prepare subPath for volumeMount "scratch" of container "app"` {
		t.Errorf("subPath through a link out of the volume: error %v", err)
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "in"}}
	if _, _, err := u.makeMounts(pod, c, nil, nil, nil); err != nil {
		t.Errorf("subPath through a link inside the volume: %v", err)
	}
}

// TestEtcHosts: the pod's /etc/hosts as the kubelet writes it.
func TestEtcHosts(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	const localhost = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	tests := []struct {
		name string
		spec v1.PodSpec
		want string
	}{{
		name: "pod IP and name",
		want: localhost + "10.88.0.7\tweb\n",
	}, {
		name: "hostname and subdomain: the FQDN, then hostAliases",
		spec: v1.PodSpec{Hostname: "db-0", Subdomain: "db", HostAliases: aliases},
		want: localhost + "10.88.0.7\tdb-0.db.shop.svc.cluster.local\tdb-0\n" +
			"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n",
	}, {
		name: "host network: the node's hosts file",
		spec: v1.PodSpec{HostNetwork: true, HostAliases: aliases},
		want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n10.0.0.1\tnode\n" +
			"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, true)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: tt.spec}
			p, err := u.writeEtcHosts(pod, []string{"10.88.0.7"})
			if err != nil {
				t.Fatal(err)
			}
			data, err := u.nodeFS.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(data)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", p, diff)
			}
		})
	}
}

// TestPodDNS: the pod's resolv.conf by dnsPolicy and dnsConfig, as the kubelet's DNS
// configurer gives it and containerd writes it.
func TestPodDNS(t *testing.T) {
	const nodeResolv = "# the node's\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch corp.example. lab.example\noptions timeout:2\n"
	two := "2"
	tests := []struct {
		name       string
		clusterDNS []string
		resolvConf string
		spec       v1.PodSpec
		want       string
		wantEvents []string
	}{{
		name:       "ClusterFirst: the cluster's server and searches, then the node's searches; ndots:5",
		clusterDNS: []string{"10.96.0.10"},
		want:       "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\nnameserver 10.96.0.10\noptions ndots:5\n",
	}, {
		name: "ClusterFirst without clusterDNS: Default, with MissingClusterDNS events",
		want: "search corp.example lab.example\nnameserver 192.168.1.1\nnameserver 192.168.1.2\noptions timeout:2\n",
		wantEvents: []string{
			`kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
			`pod: "web_shop(uid-web)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
		},
	}, {
		name:       "Default: the node's",
		clusterDNS: []string{"10.96.0.10"},
		spec:       v1.PodSpec{DNSPolicy: v1.DNSDefault},
		want:       "search corp.example lab.example\nnameserver 192.168.1.1\nnameserver 192.168.1.2\noptions timeout:2\n",
	}, {
		name:       "ClusterFirst on the host network is Default",
		clusterDNS: []string{"10.96.0.10"},
		spec:       v1.PodSpec{HostNetwork: true, DNSPolicy: v1.DNSClusterFirst},
		want:       "search corp.example lab.example\nnameserver 192.168.1.1\nnameserver 192.168.1.2\noptions timeout:2\n",
	}, {
		name:       "ClusterFirstWithHostNet",
		clusterDNS: []string{"10.96.0.10"},
		spec:       v1.PodSpec{HostNetwork: true, DNSPolicy: v1.DNSClusterFirstWithHostNet},
		want:       "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\nnameserver 10.96.0.10\noptions ndots:5\n",
	}, {
		name:       "None: only dnsConfig",
		clusterDNS: []string{"10.96.0.10"},
		spec: v1.PodSpec{DNSPolicy: v1.DNSNone, DNSConfig: &v1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1"}, Searches: []string{"example.com"},
			Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}},
		}},
		want: "search example.com\nnameserver 1.1.1.1\noptions edns0 ndots:2\n",
	}, {
		name:       "dnsConfig merged into ClusterFirst, its options winning",
		clusterDNS: []string{"10.96.0.10"},
		spec:       v1.PodSpec{DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}}}},
		want:       "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:2\n",
	}, {
		name:       "resolvConf empty: Default gets the local resolver",
		clusterDNS: []string{"10.96.0.10"},
		resolvConf: "-",
		spec:       v1.PodSpec{DNSPolicy: v1.DNSDefault},
		want:       "search .\nnameserver 127.0.0.1\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, true)
			if err := u.nodeFS.WriteFile(nodeResolvPath, []byte(nodeResolv), 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			u.dns.clusterDNS = tt.clusterDNS
			if tt.resolvConf == "-" {
				u.dns.resolvConf = ""
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: tt.spec}
			if err := u.writePodNetworkFiles(pod); err != nil {
				t.Fatal(err)
			}
			data, err := u.nodeFS.ReadFile(podResolvConfPath(pod.UID))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(data)); diff != "" {
				t.Errorf("resolv.conf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, u.eventMessages("MissingClusterDNS")); diff != "" {
				t.Errorf("MissingClusterDNS events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodHostnameFile: /etc/hostname is the pod's hostname, its FQDN with
// setHostnameAsFQDN, the node's on the host network.
func TestPodHostnameFile(t *testing.T) {
	tests := []struct {
		name string
		spec v1.PodSpec
		want string
	}{
		{name: "pod name", want: "web\n"},
		{name: "spec.hostname", spec: v1.PodSpec{Hostname: "db-0"}, want: "db-0\n"},
		{name: "FQDN", spec: v1.PodSpec{Hostname: "db-0", Subdomain: "db", SetHostnameAsFQDN: boolp(true)}, want: "db-0.db.shop.svc.cluster.local\n"},
		{name: "host network", spec: v1.PodSpec{HostNetwork: true}, want: testNode + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, true)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: tt.spec}
			if err := u.writePodNetworkFiles(pod); err != nil {
				t.Fatal(err)
			}
			data, err := u.nodeFS.ReadFile(podHostnamePath(pod.UID))
			if err != nil || string(data) != tt.want {
				t.Errorf("hostname file = %q, %v; want %q", data, err, tt.want)
			}
		})
	}
}

// TestDNSConfigFields: clusterDNS, clusterDomain and resolvConf come from the
// configuration's upstream fields; a clusterDNS entry that is not an IP is skipped.
func TestDNSConfigFields(t *testing.T) {
	res := "/run/resolv.conf"
	tests := []struct {
		name       string
		clusterDNS []string
		domain     string
		res        *string
		want       *dnsConfigurer
	}{{
		name:       "values, an invalid IP skipped",
		clusterDNS: []string{"10.96.0.10", "nope"}, domain: "cluster.local", res: &res,
		want: &dnsConfigurer{clusterDNS: []string{"10.96.0.10"}, clusterDomain: "cluster.local", resolvConf: "/run/resolv.conf"},
	}, {
		name: "defaults",
		want: &dnsConfigurer{resolvConf: "/etc/resolv.conf"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &config.Config{}
			c.Kubelet.ClusterDNS = tt.clusterDNS
			c.Kubelet.ClusterDomain = tt.domain
			c.Kubelet.ResolverConfig = tt.res
			got, err := newDNSConfigurer(c, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(dnsConfigurer{})); diff != "" {
				t.Errorf("configurer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServiceAccountToken: the TokenRequest the kubelet makes for a projected token (the
// pod's service account, audience, lifetime, bound to the pod), kept until 80% of its
// lifetime passed, then requested again.
func TestServiceAccountToken(t *testing.T) {
	u := newUnitKubelet(t, false)
	var reqs []*authenticationv1.TokenRequest
	var names []string
	u.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		reqs = append(reqs, tr.DeepCopy())
		names = append(names, ca.Name)
		tr.Status.Token = "t" + string(rune('0'+len(reqs)))
		tr.Status.ExpirationTimestamp = metav1.NewTime(u.clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: v1.PodSpec{ServiceAccountName: "builder"}}
	src := &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: int64p(1000), Path: "token"}
	ctx := context.Background()
	get := func() string {
		t.Helper()
		tok, err := u.objects.ServiceAccountToken(ctx, pod, src)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if tok := get(); tok != "t1" {
		t.Fatalf("token = %q, want t1", tok)
	}
	want := authenticationv1.TokenRequestSpec{
		Audiences: []string{"vault"}, ExpirationSeconds: int64p(1000),
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-web"},
	}
	if diff := cmp.Diff(want, reqs[0].Spec); diff != "" || names[0] != "builder" {
		t.Errorf("token request for %q (-want +got):\n%s", names[0], diff)
	}
	u.clk.Step(790 * time.Second)
	if tok := get(); tok != "t1" || len(reqs) != 1 {
		t.Errorf("before 80%% of its life: token %q after %d requests, want the cached t1", tok, len(reqs))
	}
	u.clk.Step(20 * time.Second)
	if tok := get(); tok != "t2" || len(reqs) != 2 {
		t.Errorf("after 80%% of its life: token %q after %d requests, want a new t2", tok, len(reqs))
	}
}

// TestSubPathDirectoryMode: a missing subPath is made with all of its volume's mode, the
// setgid bit of an fsGroup and the sticky bit of a tmpfs's root included, as upstream's
// SafeMakeDir chmods it (the [sig-storage] emptyDir FSGroup subPath spec reads
// dgtrwxrwxrwx).
func TestSubPathDirectoryMode(t *testing.T) {
	tests := []struct {
		name    string
		medium  v1.StorageMedium
		fsGroup *int64
		want    string
	}{
		{"disk", v1.StorageMediumDefault, nil, "drwxrwxrwx"},
		{"disk, fsGroup", v1.StorageMediumDefault, int64p(123), "dgrwxrwxrwx"},
		{"tmpfs", v1.StorageMediumMemory, nil, "dtrwxrwxrwx"},
		{"tmpfs, fsGroup", v1.StorageMediumMemory, int64p(123), "dgtrwxrwxrwx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, false)
			pod := volumePod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: tt.medium}}})
			pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: tt.fsGroup}
			if err := u.preparePod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/test-volume", SubPath: "test-sub"}}
			mounts, _, err := u.makeMounts(pod, c, nil, []string{"10.88.0.7"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			info, err := u.nodeFS.Stat(mounts[0].HostPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode.String(); got != tt.want {
				t.Errorf("subPath directory mode = %s, want %s", got, tt.want)
			}
		})
	}
}
