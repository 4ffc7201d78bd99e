package images

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		ref        string
		want       string // entry name
		catalogued bool
	}{
		{"busybox", "busybox", true},
		{"busybox:1.36", "busybox", true},
		{"docker.io/busybox", "busybox", true},
		{"library/busybox:1.36.1", "busybox", true},
		{"docker.io/library/busybox@sha256:" + hex64, "busybox", true},
		{"registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "e2e-busybox", true},
		{"alpine:3.19", "alpine", true},
		{"debian:bookworm-slim", "debian", true},
		{"ubuntu:22.04", "ubuntu", true},
		{"nginx", "nginx", true},
		{"nginx:1.25", "nginx", true},
		{"registry.k8s.io/e2e-test-images/nginx:1.14-4", "e2e-nginx", true},
		{"registry.k8s.io/e2e-test-images/nginx:1.27.0-2", "e2e-nginx-1.27", true}, // v1.37's Nginx
		{"registry.k8s.io/e2e-test-images/nginx:1.28.0-2", "e2e-nginx-1.28", true}, // and NginxNew
		{"httpd:2.4", "httpd", true},
		{"registry.k8s.io/e2e-test-images/httpd:2.4.39-4", "e2e-httpd", true},
		{"redis:7", "redis", true},
		{"registry.k8s.io/pause:3.9", "pause", true},
		{"k8s.gcr.io/pause:3.9", "pause", true},
		{"registry.k8s.io/e2e-test-images/agnhost:2.47", "agnhost", true},
		{"registry.k8s.io/e2e-test-images/nonroot:1.4", "e2e-nonroot", true},
		{"registry.k8s.io/e2e-test-images/kitten:1.8", "e2e-kitten", true},
		{"registry.k8s.io/e2e-test-images/nautilus:1.8", "e2e-nautilus", true},
		// Not catalogued: the fallback userland.
		{"busybox:nonexistent-tag", "unknown", false},
		{"python:3.12", "unknown", false},
		{"bitnami/redis:7.2", "unknown", false},
		{"Busybox", "unknown", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			img, ok := Lookup(tt.ref)
			if img.Name != tt.want || ok != tt.catalogued || img.Catalogued != tt.catalogued {
				t.Errorf("Lookup(%q) = %q, %t (Catalogued %t); want %q, %t", tt.ref, img.Name, ok, img.Catalogued, tt.want, tt.catalogued)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		want Config
	}{
		{"unknown", Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
		{"busybox", Config{Cmd: []string{"sh"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
		{"nginx", Config{
			Entrypoint: []string{"/docker-entrypoint.sh"},
			Cmd:        []string{"nginx", "-g", "daemon off;"},
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_VERSION=1.25.4", "NJS_VERSION=0.8.3", "PKG_RELEASE=1~bookworm"},
			StopSignal: "SIGQUIT",
		}},
		{"httpd", Config{
			Cmd:        []string{"httpd-foreground"},
			Env:        []string{"PATH=/usr/local/apache2/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HTTPD_PREFIX=/usr/local/apache2", "HTTPD_VERSION=2.4.58"},
			WorkingDir: "/usr/local/apache2",
			StopSignal: "SIGWINCH",
		}},
		{"pause", Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}},
		// agnhost sets an entrypoint: alpine's cmd is not inherited.
		{"agnhost", Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
		{"e2e-kitten", Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
		{"e2e-nautilus", Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
		{"e2e-nonroot", Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, User: "1234"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, ok := named(tt.name)
			if !ok {
				t.Fatalf("no entry %q", tt.name)
			}
			if diff := cmp.Diff(tt.want, img.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if img, _ := named("nginx"); !cmp.Equal(img.Listen, []Listen{{Port: 80, Protocol: "TCP", Program: "nginx"}}) {
		t.Errorf("nginx listens on %+v, want 80/TCP nginx", img.Listen)
	}
}

// node describes a path of an image tree as a test expects it.
type node struct {
	Kind    string // "file", "dir", "link", "program"
	Program string
	Target  string
	Perm    string // fs.FileMode's String()
	UID     int64
	GID     int64
	Content string // checked when not empty
	Has     string // checked when not empty: a substring of the content
}

func describe(t *testing.T, v *vfs.View, p string, want node) node {
	t.Helper()
	info, err := v.Lstat(p)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return node{}
	}
	got := node{Perm: info.Mode.String(), UID: info.UID, GID: info.GID}
	switch {
	case info.Mode&fs.ModeSymlink != 0:
		got.Kind, got.Target, got.Perm = "link", info.Target, ""
	case info.Mode.IsDir():
		got.Kind = "dir"
	case info.Program != "":
		got.Kind, got.Program = "program", info.Program
	default:
		got.Kind = "file"
	}
	if got.Kind == "file" && (want.Content != "" || want.Has != "") {
		data, _ := v.ReadFile(p)
		if want.Content != "" {
			got.Content = string(data)
		}
		if want.Has != "" && strings.Contains(string(data), want.Has) {
			got.Has = want.Has
		}
	}
	return got
}

func TestTrees(t *testing.T) {
	const nginxDefault = "<title>Welcome to nginx!</title>"
	tests := map[string]map[string]node{
		"unknown": {
			"/bin/sh":        {Kind: "program", Program: "sh", Perm: "-rwxr-xr-x"},
			"/usr/bin/env":   {Kind: "link", Target: "/bin/env"},
			"/tmp":           {Kind: "dir", Perm: "dtrwxrwxrwx"},
			"/root":          {Kind: "dir", Perm: "drwx------"},
			"/dev/null":      {Kind: "file", Perm: "-rw-rw-rw-"},
			"/etc/passwd":    {Kind: "file", Perm: "-rw-r--r--", Content: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
			"/etc/group":     {Kind: "file", Perm: "-rw-r--r--", Content: "root:x:0:\nnogroup:x:65534:\n"},
			"/usr/local/bin": {Kind: "dir", Perm: "drwxr-xr-x"},
		},
		"busybox": {
			"/bin/sh":     {Kind: "program", Program: "sh", Perm: "-rwxr-xr-x"},
			"/etc/passwd": {Kind: "file", Perm: "-rw-r--r--", Has: "nobody:x:65534:65534:nobody:/home:/bin/false\n"},
			"/var/www":    {Kind: "dir", Perm: "drwxr-xr-x"},
		},
		"alpine": {
			"/bin/sh":             {Kind: "program", Program: "sh", Perm: "-rwxr-xr-x"},
			"/etc/alpine-release": {Kind: "file", Perm: "-rw-r--r--", Content: "3.19.1\n"},
			"/etc/os-release":     {Kind: "file", Perm: "-rw-r--r--", Has: "ID=alpine\n"},
			"/etc/passwd":         {Kind: "file", Perm: "-rw-r--r--", Has: "root:x:0:0:root:/root:/bin/ash\n"},
		},
		"debian": {
			"/bin":                {Kind: "link", Target: "usr/bin"},
			"/sbin":               {Kind: "link", Target: "usr/sbin"},
			"/usr/bin/sh":         {Kind: "link", Target: "dash"},
			"/usr/bin/dash":       {Kind: "program", Program: "dash", Perm: "-rwxr-xr-x"},
			"/usr/bin/bash":       {Kind: "program", Program: "bash", Perm: "-rwxr-xr-x"},
			"/etc/os-release":     {Kind: "link", Target: "../usr/lib/os-release"},
			"/usr/lib/os-release": {Kind: "file", Perm: "-rw-r--r--", Has: "VERSION_CODENAME=bookworm\n"},
			"/etc/debian_version": {Kind: "file", Perm: "-rw-r--r--", Content: "12.5\n"},
		},
		"ubuntu": {
			"/usr/lib/os-release": {Kind: "file", Perm: "-rw-r--r--", Has: "UBUNTU_CODENAME=noble\n"},
			"/home/ubuntu":        {Kind: "dir", Perm: "drwxr-x---", UID: 1000, GID: 1000},
			"/etc/passwd":         {Kind: "file", Perm: "-rw-r--r--", Has: "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n"},
		},
		"nginx": {
			"/docker-entrypoint.sh":                                {Kind: "file", Perm: "-rwxrwxr-x", Has: "exec \"$@\"\n"},
			"/docker-entrypoint.d/10-listen-on-ipv6-by-default.sh": {Kind: "file", Perm: "-rwxrwxr-x", Has: "info: ipv6 not available"},
			"/usr/sbin/nginx":                                      {Kind: "program", Program: "nginx", Perm: "-rwxr-xr-x"},
			"/usr/share/nginx/html/index.html":                     {Kind: "file", Perm: "-rw-r--r--", Has: nginxDefault},
			"/etc/nginx/nginx.conf":                                {Kind: "file", Perm: "-rw-r--r--", Has: "include /etc/nginx/conf.d/*.conf;"},
			"/etc/nginx/conf.d/default.conf":                       {Kind: "file", Perm: "-rw-r--r--", Has: "listen       80;"},
			"/var/log/nginx/access.log":                            {Kind: "link", Target: "/dev/stdout"},
			"/var/log/nginx/error.log":                             {Kind: "link", Target: "/dev/stderr"},
			"/etc/passwd":                                          {Kind: "file", Perm: "-rw-r--r--", Has: "\nnginx:x:101:101:nginx user:/nonexistent:/bin/false\n"},
			"/etc/group":                                           {Kind: "file", Perm: "-rw-r--r--", Has: "\nnginx:x:101:\n"},
			"/usr/bin/dash":                                        {Kind: "program", Program: "dash", Perm: "-rwxr-xr-x"},
		},
		// The e2e ImageVolume specs read these two through an image volume.
		"e2e-kitten": {
			"/data.json":      {Kind: "file", Perm: "-rw-r--r--", Has: `"image": "kitten.jpg"`},
			"/kitten.jpg":     {Kind: "file", Perm: "-rw-r--r--"},
			"/etc/os-release": {Kind: "file", Perm: "-rw-r--r--", Has: `NAME="Alpine Linux"`},
			"/agnhost":        {Kind: "program", Program: "agnhost", Perm: "-rwxr-xr-x"},
		},
		"e2e-nautilus": {
			"/data.json":    {Kind: "file", Perm: "-rw-r--r--", Has: `"image": "nautilus.jpg"`},
			"/nautilus.jpg": {Kind: "file", Perm: "-rw-r--r--"},
		},
		"e2e-nginx": {
			"/usr/share/nginx/html/index.html": {Kind: "file", Perm: "-rw-r--r--", Has: nginxDefault},
			"/etc/alpine-release":              {Kind: "file", Perm: "-rw-r--r--", Content: "3.19.1\n"},
		},
		"httpd": {
			"/usr/local/apache2/htdocs/index.html": {Kind: "file", Perm: "-rw-r--r--", Content: "<html><body><h1>It works!</h1></body></html>\n"},
			"/usr/local/apache2/bin/httpd":         {Kind: "program", Program: "httpd", Perm: "-rwxr-xr-x"},
			"/usr/local/bin/httpd-foreground":      {Kind: "file", Perm: "-rwxr-xr-x", Has: "exec httpd -DFOREGROUND \"$@\"\n"},
		},
		"e2e-httpd": {
			"/usr/local/apache2/htdocs/index.html": {Kind: "file", Perm: "-rw-r--r--", Content: "<html><body><h1>It works!</h1></body></html>\n"},
			"/etc/passwd":                          {Kind: "file", Perm: "-rw-r--r--", Has: "\nwww-data:x:82:82:Linux User,,,:/home/www-data:/sbin/nologin\n"},
		},
		"redis": {
			"/data":                               {Kind: "dir", Perm: "drwxr-xr-x", UID: 999, GID: 999},
			"/usr/local/bin/redis-server":         {Kind: "program", Program: "redis-server", Perm: "-rwxr-xr-x"},
			"/usr/local/bin/docker-entrypoint.sh": {Kind: "file", Perm: "-rwxrwxr-x", Has: "set -- redis-server \"$@\""},
		},
		"pause": {
			"/pause":      {Kind: "program", Program: "pause", Perm: "-rwxr-xr-x"},
			"/etc/passwd": {Kind: "file", Perm: "-rw-r--r--"},
			"/tmp":        {Kind: "dir", Perm: "dtrwxrwxrwx"},
		},
		"agnhost": {
			"/agnhost":   {Kind: "program", Program: "agnhost", Perm: "-rwxr-xr-x"},
			"/agnhost-2": {Kind: "link", Target: "agnhost"},
			"/bin/sh":    {Kind: "program", Program: "sh", Perm: "-rwxr-xr-x"},
			"/bin/bash":  {Kind: "program", Program: "bash", Perm: "-rwxr-xr-x"},
			"/uploads":   {Kind: "dir", Perm: "drwxr-xr-x"},
		},
		"e2e-nonewprivs": {
			"/usr/local/bin/nnp": {Kind: "program", Program: "nnp", Perm: "urwxr-xr-x"},
		},
	}
	for name, paths := range tests {
		t.Run(name, func(t *testing.T) {
			img, ok := named(name)
			if !ok {
				t.Fatalf("no entry %q", name)
			}
			v := vfs.NewView(vfs.New(nil), img.Tree(), false)
			for p, want := range paths {
				if diff := cmp.Diff(want, describe(t, v, p, want)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
		})
	}
}

// TestApplets: each image has the applets where it should and only those it should.
func TestApplets(t *testing.T) {
	names := programs.Names()
	if len(names) < 100 {
		t.Fatalf("package programs has %d applets; busybox's images hold over 100", len(names))
	}
	type where struct{ image, path string }
	has := map[where]bool{}
	for _, img := range []string{"busybox", "alpine", "debian", "ubuntu", "unknown"} {
		i, _ := named(img)
		v := vfs.NewView(vfs.New(nil), i.Tree(), false)
		for _, n := range names {
			for _, dir := range []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin"} {
				if info, err := v.Stat(path.Join(dir, n)); err == nil && info.Program == n {
					has[where{img, dir}] = true
					has[where{img, n}] = true
				}
			}
		}
	}
	for _, n := range names {
		if !has[where{"busybox", n}] || !has[where{"alpine", n}] || !has[where{"unknown", n}] {
			t.Errorf("applet %s is missing from busybox, alpine or the fallback", n)
		}
	}
	wantIn := func(image, name string, want bool) {
		for _, n := range names {
			if n == name && has[where{image, name}] != want {
				t.Errorf("%s has %s: %t, want %t", image, name, !want, want)
			}
		}
	}
	wantIn("debian", "ls", true)
	wantIn("debian", "yes", true) // a YAML 1.1 boolean unless quoted
	wantIn("debian", "true", true)
	wantIn("debian", "ps", false) // no procps in Debian's base image
	wantIn("ubuntu", "ps", true)
	wantIn("debian", "wget", false)
	// Alpine keeps busybox's install directories: env is /usr/bin/env, ls is /bin/ls.
	alpine, _ := named("alpine")
	v := vfs.NewView(vfs.New(nil), alpine.Tree(), false)
	for p, prog := range map[string]string{"/usr/bin/env": "env", "/bin/ls": "ls"} {
		if info, err := v.Stat(p); slices.Contains(names, prog) && (err != nil || info.Program != prog) {
			t.Errorf("alpine %s: %+v, %v; want the %s applet", p, info, err, prog)
		}
	}
}

// TestTreeIsSharedAndFrozen: a tree is built once; a container writing to it copies.
func TestTreeIsSharedAndFrozen(t *testing.T) {
	img, _ := named("busybox")
	root := img.Tree()
	if img.Tree() != root {
		t.Fatal("Tree built twice")
	}
	a := vfs.NewView(vfs.New(nil), root, false)
	if err := a.WriteFile("/etc/passwd", []byte("changed\n"), 0o644, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	b := vfs.NewView(vfs.New(nil), img.Tree(), false)
	if data, _ := b.ReadFile("/etc/passwd"); strings.HasPrefix(string(data), "changed") {
		t.Error("a container's write changed the image")
	}
}

func TestLoadErrors(t *testing.T) {
	const valid = "images:\n  - {name: unknown, fallback: true}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", valid + "  - {name: x, colour: red}\n", `error unmarshaling JSON: while decoding JSON: json: unknown field "colour"`},
		{"no fallback", "images:\n  - {name: x}\n", `images: want exactly one entry with "fallback: true", got 0`},
		{"missing name", valid + "  - {from: unknown}\n", `images[1] (""): field "name": required`},
		{"duplicate name", valid + "  - {name: unknown}\n", `images[1] ("unknown"): field "name": duplicate`},
		{"unknown parent", valid + "  - {name: x, from: base}\n", `images[1] ("x"): field "from": no image named "base"`},
		{"inheritance cycle", valid + "  - {name: x, from: z}\n  - {name: z, from: x}\n", `images[1] ("x"): field "from": inheritance cycle through "x"`},
		{"repository not normalised", valid + "  - {name: x, repositories: [busybox]}\n", `images[1] ("x"): field "repositories[0]": "busybox": want a normalised repository without tag, such as "docker.io/library/busybox"`},
		{"repository with a tag", valid + "  - {name: x, repositories: [docker.io/library/busybox:1]}\n", `images[1] ("x"): field "repositories[0]": "docker.io/library/busybox:1": want a normalised repository without tag, such as "docker.io/library/busybox"`},
		{"bad tag pattern", valid + "  - {name: x, tags: [\"1.[\"]}\n", `images[1] ("x"): field "tags[0]": pattern "1.[": syntax error in pattern`},
		{"bad env", valid + "  - {name: x, config: {env: [PATH]}}\n", `images[1] ("x"): field "config.env[0]": "PATH": want NAME=value`},
		{"relative workingDir", valid + "  - {name: x, config: {workingDir: data}}\n", `images[1] ("x"): field "config.workingDir": "data": must be an absolute path`},
		{"bad stop signal", valid + "  - {name: x, config: {stopSignal: QUIT}}\n", `images[1] ("x"): field "config.stopSignal": "QUIT": want a signal name such as SIGQUIT`},
		{"bad listen port", valid + "  - {name: x, listen: [{port: 0, protocol: TCP, program: p}]}\n", `images[1] ("x"): field "listen[0].port": 0: want 1-65535`},
		{"bad listen protocol", valid + "  - {name: x, listen: [{port: 80, protocol: tcp, program: p}]}\n", `images[1] ("x"): field "listen[0].protocol": "tcp": want TCP or UDP`},
		{"applets without a place", valid + "  - {name: x, applets: {only: [ls]}}\n", `images[1] ("x"): field "applets": want dir or layout`},
		{"unknown layout", valid + "  - {name: x, applets: {layout: gnu}}\n", `images[1] ("x"): field "applets.layout": "gnu": want busybox`},
		{"relative file path", valid + "  - {name: x, files: [{path: etc/x}]}\n", `images[1] ("x"): files[0]: field "path": "etc/x": want a clean absolute path below /`},
		{"file both dir and link", valid + "  - {name: x, files: [{path: /x, dir: true, link: /y}]}\n", `images[1] ("x"): files[0]: /x: dir, link and program exclude each other`},
		{"bad mode", valid + "  - {name: x, files: [{path: /x, mode: \"0999\"}]}\n", `images[1] ("x"): files[0]: /x: field "mode": "0999": want an octal mode such as 0644`},
		{"bad passwd line", valid + "  - {name: x, passwd: [\"web:x:101\"]}\n", `images[1] ("x"): field "passwd[0]": "web:x:101": want 7 colon-separated fields, got 3`},
		{"non-numeric uid", valid + "  - {name: x, passwd: [\"web:x:abc:101::/:/bin/sh\"]}\n", `images[1] ("x"): field "passwd[0]": "web:x:abc:101::/:/bin/sh": field 3: "abc" is not a numeric id`},
		{"bad group line", valid + "  - {name: x, group: [\"web:x\"]}\n", `images[1] ("x"): field "group[0]": "web:x": want 4 colon-separated fields, got 2`},
		{"fallback with repositories", "images:\n  - {name: u, fallback: true, repositories: [docker.io/library/x]}\n", `images[0] ("u"): field "repositories": the fallback entry stands for uncatalogued images and names none`},
		{"registry without host", valid + "registries: [{domain: x.io}]\n", `registries[0] (""): field "host": required`},
		{"bad official name", valid + "officialImages: [Nginx]\n", `officialImages[0]: "Nginx" is not a repository name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load([]byte(tt.yaml))
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("load: %v\nwant an error ending %q", err, tt.want)
			}
		})
	}
	if _, err := load([]byte(valid)); err != nil {
		t.Errorf("a minimal catalogue: %v", err)
	}
	if _, err := load(catalogueYAML); err != nil {
		t.Errorf("the embedded catalogue: %v", err)
	}
}
