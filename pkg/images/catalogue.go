package images

import (
	_ "embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

//go:embed catalogue.yaml
var catalogueYAML []byte

// Config is the part of an image's OCI config a container runtime uses to start it.
type Config struct {
	Entrypoint []string
	Cmd        []string
	// Env is NAME=value, in order; the container's own variables override it by name.
	Env        []string
	WorkingDir string
	// User is "uid", "uid:gid", "name" or "name:group", as in the image config; "" is root.
	User string
	// StopSignal is the signal a stop sends first ("SIGQUIT" for nginx); "" is SIGTERM.
	StopSignal string
}

// Listen is a port the image's program listens on once it runs. It is for the servers the
// simulator runs (whoever simulates Program answers on Port); the catalogue only records it.
type Listen struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"` // TCP or UDP
	Program  string `json:"program"`  // the simulated program that listens
}

// Image is a catalogue entry: what a container of the image sees and runs. Images are
// immutable and shared; safe for concurrent use.
type Image struct {
	// Name is the entry's name ("busybox", "agnhost", "unknown").
	Name string
	// Catalogued is false for the fallback entry, which stands for any image nobody
	// described: a generic Linux userland whose own entrypoint is not simulated (its
	// Config has no Entrypoint or Cmd), so that `sh -c ...` commands still run in it.
	Catalogued bool
	Config     Config
	Listen     []Listen

	c        *catalogue
	e        *entry
	once     sync.Once
	tree     *vfs.Node
	buildErr error
}

// Tree is the image's root filesystem, built on first use, frozen and shared by every
// container of the image (vfs.NewView copies on write).
func (i *Image) Tree() *vfs.Node {
	i.once.Do(func() { i.tree, i.buildErr = i.c.build(i.e, programs.Names()) })
	if i.buildErr != nil {
		// The catalogue is validated when it loads, so a failure here is a bug in build.
		panic(fmt.Sprintf("images: build the tree of %q: %v", i.Name, i.buildErr))
	}
	return i.tree
}

// catalogue is the parsed catalogue.yaml.
type catalogue struct {
	Skeleton   []file              `json:"skeleton"`
	BusyboxDir map[string][]string `json:"busyboxDirs"`
	Registries []registry          `json:"registries"`
	Official   []string            `json:"officialImages"`
	Entries    []*entry            `json:"images"`

	byName   map[string]*entry
	official map[string]bool
	images   map[string]*Image
	fallback *Image
	// applet install directories for layout "busybox", by applet.
	busyboxDir map[string]string
}

// entry is one image of catalogue.yaml, merged with what it inherits (From) once loaded.
type entry struct {
	Name         string       `json:"name"`
	From         string       `json:"from"`
	Fallback     bool         `json:"fallback"`
	Repositories []string     `json:"repositories"`
	Tags         []string     `json:"tags"`
	Config       configYAML   `json:"config"`
	Listen       []Listen     `json:"listen"`
	Applets      *appletsYAML `json:"applets"`
	Files        []file       `json:"files"`
	Passwd       []string     `json:"passwd"`
	Group        []string     `json:"group"`

	merged bool
}

type configYAML struct {
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd"`
	Env        []string `json:"env"`
	WorkingDir string   `json:"workingDir"`
	User       string   `json:"user"`
	StopSignal string   `json:"stopSignal"`
}

// appletsYAML says where the image has the busybox applets (the names programs.Names
// lists): every one in Dir, or each in its busybox install directory (Layout "busybox");
// Only keeps the named ones, Except drops some.
type appletsYAML struct {
	Dir    string   `json:"dir"`
	Layout string   `json:"layout"`
	Only   []string `json:"only"`
	Extra  []string `json:"extra"`
	Except []string `json:"except"`
}

// keeps reports whether the image has the applet name.
func (a *appletsYAML) keeps(name string) bool {
	if slices.Contains(a.Except, name) {
		return false
	}
	return len(a.Only) == 0 && len(a.Extra) == 0 || slices.Contains(a.Only, name) || slices.Contains(a.Extra, name)
}

// file is a file, directory or link of an image.
type file struct {
	Path    string `json:"path"`
	Dir     bool   `json:"dir"`
	Link    string `json:"link"`
	Program string `json:"program"`
	Content string `json:"content"`
	Mode    string `json:"mode"` // octal, e.g. "0644", "1777", "4755"
	UID     int64  `json:"uid"`
	GID     int64  `json:"gid"`
}

// registry describes what a registry host serves.
type registry struct {
	Host string `json:"host"`
	// Aliases are other hosts that serve the same repositories (k8s.gcr.io).
	Aliases []string `json:"aliases"`
	// Domain, when set, makes the registry authoritative for the DNS names under it: a
	// host there resolves only if it is the host, an alias or one of Resolvable.
	Domain     string   `json:"domain"`
	Resolvable []string `json:"resolvable"`
	// Repositories, when set, are the only repositories the registry has (path.Match
	// patterns); any other is not found.
	Repositories []string `json:"repositories"`
	// Private repositories (patterns) refuse anonymous pulls.
	Private []string `json:"private"`
}

// theCatalogue is the embedded catalogue, parsed and validated when the package loads:
// read-only afterwards.
var theCatalogue = mustLoad(catalogueYAML)

func mustLoad(data []byte) *catalogue {
	c, err := load(data)
	if err != nil {
		panic(fmt.Sprintf("images: embedded catalogue.yaml: %v", err))
	}
	return c
}

// load parses and validates a catalogue.
func load(data []byte) (*catalogue, error) {
	c := &catalogue{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("parse catalogue: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.official = map[string]bool{}
	for _, n := range c.Official {
		c.official[n] = true
	}
	c.busyboxDir = map[string]string{}
	for dir, names := range c.BusyboxDir {
		for _, n := range names {
			c.busyboxDir[n] = dir
		}
	}
	for _, e := range c.Entries {
		c.merge(e)
	}
	c.images = map[string]*Image{}
	for _, e := range c.Entries {
		img := &Image{Name: e.Name, Catalogued: !e.Fallback, Config: e.Config.config(), Listen: e.Listen, c: c, e: e}
		c.images[e.Name] = img
		if e.Fallback {
			c.fallback = img
		}
	}
	return c, nil
}

func (cy configYAML) config() Config {
	return Config{Entrypoint: cy.Entrypoint, Cmd: cy.Cmd, Env: cy.Env, WorkingDir: cy.WorkingDir, User: cy.User, StopSignal: cy.StopSignal}
}

// validate checks every field, with errors that name the entry and the field.
func (c *catalogue) validate() error {
	for i, f := range c.Skeleton {
		if err := f.validate(); err != nil {
			return fmt.Errorf("skeleton[%d]: %w", i, err)
		}
	}
	for dir := range c.BusyboxDir {
		if !path.IsAbs(dir) {
			return fmt.Errorf("busyboxDirs: directory %q: must be an absolute path", dir)
		}
	}
	for i, r := range c.Registries {
		where := fmt.Sprintf("registries[%d] (%q)", i, r.Host)
		if r.Host == "" {
			return fmt.Errorf("%s: field \"host\": required", where)
		}
		for j, p := range slices.Concat(r.Repositories, r.Private) {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("%s: repository pattern %d %q: %w", where, j, p, err)
			}
		}
	}
	for i, n := range c.Official {
		if _, err := parse("docker.io/library/" + n); err != nil || strings.Contains(n, "/") {
			return fmt.Errorf("officialImages[%d]: %q is not a repository name", i, n)
		}
	}
	c.byName = map[string]*entry{}
	fallbacks := 0
	for i, e := range c.Entries {
		where := fmt.Sprintf("images[%d] (%q)", i, e.Name)
		if e.Name == "" {
			return fmt.Errorf("%s: field \"name\": required", where)
		}
		if c.byName[e.Name] != nil {
			return fmt.Errorf("%s: field \"name\": duplicate", where)
		}
		c.byName[e.Name] = e
		if e.Fallback {
			fallbacks++
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	for i, e := range c.Entries {
		if e.From != "" && c.byName[e.From] == nil {
			return fmt.Errorf("images[%d] (%q): field \"from\": no image named %q", i, e.Name, e.From)
		}
		seen := map[string]bool{}
		for x := e; x != nil && x.From != ""; x = c.byName[x.From] {
			if seen[x.Name] {
				return fmt.Errorf("images[%d] (%q): field \"from\": inheritance cycle through %q", i, e.Name, x.Name)
			}
			seen[x.Name] = true
		}
	}
	if fallbacks != 1 {
		return fmt.Errorf("images: want exactly one entry with \"fallback: true\", got %d", fallbacks)
	}
	return nil
}

func (e *entry) validate() error {
	for i, r := range e.Repositories {
		ref, err := ParseReference(r)
		if err != nil {
			return fmt.Errorf("field \"repositories[%d]\": %q: %w", i, r, err)
		}
		if ref.Name() != r {
			return fmt.Errorf("field \"repositories[%d]\": %q: want a normalised repository without tag, such as %q", i, r, ref.Name())
		}
	}
	for i, t := range e.Tags {
		if _, err := path.Match(t, ""); err != nil {
			return fmt.Errorf("field \"tags[%d]\": pattern %q: %w", i, t, err)
		}
	}
	if e.Fallback && len(e.Repositories) > 0 {
		return fmt.Errorf("field \"repositories\": the fallback entry stands for uncatalogued images and names none")
	}
	for i, kv := range e.Config.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("field \"config.env[%d]\": %q: want NAME=value", i, kv)
		}
	}
	if wd := e.Config.WorkingDir; wd != "" && !path.IsAbs(wd) {
		return fmt.Errorf("field \"config.workingDir\": %q: must be an absolute path", wd)
	}
	if s := e.Config.StopSignal; s != "" && !strings.HasPrefix(s, "SIG") {
		return fmt.Errorf("field \"config.stopSignal\": %q: want a signal name such as SIGQUIT", s)
	}
	for i, l := range e.Listen {
		if l.Port < 1 || l.Port > 65535 {
			return fmt.Errorf("field \"listen[%d].port\": %d: want 1-65535", i, l.Port)
		}
		if l.Protocol != "TCP" && l.Protocol != "UDP" {
			return fmt.Errorf("field \"listen[%d].protocol\": %q: want TCP or UDP", i, l.Protocol)
		}
		if l.Program == "" {
			return fmt.Errorf("field \"listen[%d].program\": required", i)
		}
	}
	if a := e.Applets; a != nil {
		switch {
		case a.Dir == "" && a.Layout == "":
			return fmt.Errorf("field \"applets\": want dir or layout")
		case a.Dir != "" && a.Layout != "":
			return fmt.Errorf("field \"applets\": dir and layout exclude each other")
		case a.Dir != "" && !path.IsAbs(a.Dir):
			return fmt.Errorf("field \"applets.dir\": %q: must be an absolute path", a.Dir)
		case a.Layout != "" && a.Layout != "busybox":
			return fmt.Errorf("field \"applets.layout\": %q: want busybox", a.Layout)
		}
	}
	for i, f := range e.Files {
		if err := f.validate(); err != nil {
			return fmt.Errorf("files[%d]: %w", i, err)
		}
	}
	for i, line := range e.Passwd {
		if err := checkDBLine(line, 7, 2, 3); err != nil {
			return fmt.Errorf("field \"passwd[%d]\": %q: %w", i, line, err)
		}
	}
	for i, line := range e.Group {
		if err := checkDBLine(line, 4, 2); err != nil {
			return fmt.Errorf("field \"group[%d]\": %q: %w", i, line, err)
		}
	}
	return nil
}

// checkDBLine checks a line of /etc/passwd or /etc/group: n fields, numeric ids.
func checkDBLine(line string, n int, ids ...int) error {
	f := strings.Split(line, ":")
	if len(f) != n {
		return fmt.Errorf("want %d colon-separated fields, got %d", n, len(f))
	}
	for _, i := range ids {
		if _, err := strconv.ParseUint(f[i], 10, 32); err != nil {
			return fmt.Errorf("field %d: %q is not a numeric id", i+1, f[i])
		}
	}
	return nil
}

func (f file) validate() error {
	if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
		return fmt.Errorf("field \"path\": %q: want a clean absolute path below /", f.Path)
	}
	kinds := 0
	for _, set := range []bool{f.Dir, f.Link != "", f.Program != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return fmt.Errorf("%s: dir, link and program exclude each other", f.Path)
	}
	if f.Content != "" && (f.Dir || f.Link != "") {
		return fmt.Errorf("%s: field \"content\": only a regular file has content", f.Path)
	}
	if f.Mode != "" {
		if _, err := parseMode(f.Mode); err != nil {
			return fmt.Errorf("%s: field \"mode\": %w", f.Path, err)
		}
	}
	if f.UID < 0 || f.GID < 0 {
		return fmt.Errorf("%s: fields \"uid\" and \"gid\": must not be negative", f.Path)
	}
	return nil
}

// parseMode reads an octal mode with its setuid (4000), setgid (2000) and sticky (1000)
// bits as an fs.FileMode.
func parseMode(s string) (fs.FileMode, error) {
	u, err := strconv.ParseUint(s, 8, 32)
	if err != nil || u > 0o7777 {
		return 0, fmt.Errorf("%q: want an octal mode such as 0644", s)
	}
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m, nil
}

// merge resolves e's inheritance: what e does not set, it takes from the image it is
// built from, as a Dockerfile's FROM: files, users and env accumulate; setting an
// entrypoint resets the inherited cmd, as Docker does.
func (c *catalogue) merge(e *entry) {
	if e.merged || e.From == "" {
		e.merged = true
		return
	}
	p := c.byName[e.From]
	c.merge(p)
	// Repositories and tags are not inherited: an entry names the images it describes.
	cfg := p.Config
	if e.Config.Entrypoint != nil {
		cfg.Entrypoint = e.Config.Entrypoint
		cfg.Cmd = nil
	}
	if e.Config.Cmd != nil {
		cfg.Cmd = e.Config.Cmd
	}
	cfg.Env = mergeEnv(p.Config.Env, e.Config.Env)
	if e.Config.WorkingDir != "" {
		cfg.WorkingDir = e.Config.WorkingDir
	}
	if e.Config.User != "" {
		cfg.User = e.Config.User
	}
	if e.Config.StopSignal != "" {
		cfg.StopSignal = e.Config.StopSignal
	}
	e.Config = cfg
	if e.Listen == nil {
		e.Listen = p.Listen
	}
	if e.Applets == nil {
		e.Applets = p.Applets
	}
	e.Files = slices.Concat(p.Files, e.Files)
	e.Passwd = slices.Concat(p.Passwd, e.Passwd)
	e.Group = slices.Concat(p.Group, e.Group)
	e.merged = true
}

// mergeEnv is base with over's variables replacing those of the same name, new ones
// appended, as Docker's ENV.
func mergeEnv(base, over []string) []string {
	out := slices.Clone(base)
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		if i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

// Lookup returns the catalogue's image for ref (any form a pod spec may give: "busybox",
// "busybox:1.36", "docker.io/library/busybox@sha256:..."), and true; or the fallback
// image (a generic userland, Catalogued false) and false when the catalogue does not
// describe it, ref is malformed or names a tag the entry does not have. Lookup does not
// say whether ref can be pulled: ask Exists.
func Lookup(ref string) (*Image, bool) {
	return theCatalogue.lookup(ref)
}

func (c *catalogue) lookup(ref string) (*Image, bool) {
	r, err := ParseReference(ref)
	if err != nil {
		return c.fallback, false
	}
	if e := c.entryFor(r); e != nil {
		return c.images[e.Name], true
	}
	return c.fallback, false
}

// entryFor is the first entry that has r's repository and tag (a digest matches any
// entry of the repository: the catalogue does not know digests).
func (c *catalogue) entryFor(r Reference) *entry {
	name := c.canonicalName(r)
	for _, e := range c.Entries {
		if slices.Contains(e.Repositories, name) && (r.Digest != "" || tagMatches(e.Tags, r.Tag)) {
			return e
		}
	}
	return nil
}

// catalogued reports whether any entry describes r's repository.
func (c *catalogue) catalogued(r Reference) bool {
	name := c.canonicalName(r)
	for _, e := range c.Entries {
		if slices.Contains(e.Repositories, name) {
			return true
		}
	}
	return false
}

// canonicalName is r's repository under its registry's main host (k8s.gcr.io serves
// registry.k8s.io's images).
func (c *catalogue) canonicalName(r Reference) string {
	if reg := c.registryFor(r.Domain); reg != nil {
		return reg.Host + "/" + r.Path
	}
	return r.Name()
}

// tagMatches reports whether tag is one of patterns (none: any tag exists).
func tagMatches(patterns []string, tag string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, tag); ok {
			return true
		}
	}
	return false
}

// named is the entry called name ("busybox", "unknown").
func named(name string) (*Image, bool) {
	img, ok := theCatalogue.images[name]
	return img, ok
}
