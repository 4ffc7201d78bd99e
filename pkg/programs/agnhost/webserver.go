package agnhost

import (
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// newTestWebserver is `agnhost test-webserver` (kitten's and nautilus's command): Go's
// http.FileServer over the container's whole filesystem on --port (80), with upstream's
// CORS and cache headers. Files are read as the container's user may read them.
func newTestWebserver(r *run) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "test-webserver",
		Short: "Starts a simple HTTP fileserver",
		Long:  "Starts a simple HTTP fileserver on the given --port, which serves any file specified in the URL path, if it exists.",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			fsrv := fileServer{fs: p.FS(), id: p.Identity()}
			h := &mux{root: func(req *simnet.Request) *simnet.Response {
				resp := fsrv.serve(req)
				if resp == nil {
					return nil
				}
				if resp.Header == nil {
					resp.Header = http.Header{}
				}
				resp.Header.Set("Cache-Control", "private")
				resp.Header.Set("Access-Control-Allow-Origin", "*")
				resp.Header.Set("Access-Control-Allow-Credentials", "true")
				resp.Header.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				resp.Header.Set("Access-Control-Allow-Headers", "DNT,X-Mx-ReqToken,Keep-Alive,User-Agent,X-Requested-With,Cache-Control,Content-Type")
				return resp
			}}
			if err := p.Listen("tcp", port, h); err != nil {
				goFatal(p, "%v", err)
			}
			untilKilled(p)
		},
	}
	cmd.Flags().IntVar(&port, "port", 80, "Port number.")
	return cmd
}

// fileServer is Go's http.FileServer(http.Dir("/")) over a container's filesystem.
type fileServer struct {
	fs *vfs.View
	id shell.Identity
}

// mimeTypes is Go's built-in table of mime.TypeByExtension.
var mimeTypes = map[string]string{
	".avif": "image/avif", ".css": "text/css; charset=utf-8", ".gif": "image/gif",
	".htm": "text/html; charset=utf-8", ".html": "text/html; charset=utf-8",
	".jpeg": "image/jpeg", ".jpg": "image/jpeg", ".js": "text/javascript; charset=utf-8",
	".json": "application/json", ".mjs": "text/javascript; charset=utf-8", ".pdf": "application/pdf",
	".png": "image/png", ".svg": "image/svg+xml", ".wasm": "application/wasm",
	".webp": "image/webp", ".xml": "text/xml; charset=utf-8",
}

func (f fileServer) serve(req *simnet.Request) *simnet.Response {
	upath := req.Path()
	if !strings.HasPrefix(upath, "/") {
		upath = "/" + upath
	}
	if strings.HasSuffix(upath, "/index.html") {
		return f.localRedirect(req, "./")
	}
	name := path.Clean(upath)
	info, err := f.fs.Stat(name)
	if err != nil {
		return fsError(err)
	}
	if !access(f.id, info, 4) || info.Mode.IsDir() && !access(f.id, info, 1) {
		return fsError(vfs.EACCES)
	}
	if info.Mode.IsDir() {
		if !strings.HasSuffix(upath, "/") {
			return f.localRedirect(req, path.Base(upath)+"/")
		}
		index := strings.TrimSuffix(name, "/") + "/index.html"
		if ii, err := f.fs.Stat(index); err == nil && !ii.Mode.IsDir() && access(f.id, ii, 4) {
			info, name = ii, index
		}
	} else if strings.HasSuffix(upath, "/") {
		return f.localRedirect(req, "../"+path.Base(upath))
	}
	h := http.Header{}
	if t := info.ModTime; t.Unix() != 0 && !t.IsZero() {
		h.Set("Last-Modified", t.UTC().Format(http.TimeFormat))
	}
	if info.Mode.IsDir() {
		return f.dirList(name, h)
	}
	data, err := f.fs.ReadFile(name)
	if err != nil {
		return fsError(err)
	}
	ctype, ok := mimeTypes[strings.ToLower(path.Ext(name))]
	if !ok {
		ctype = http.DetectContentType(data)
	}
	h.Set("Content-Type", ctype)
	h.Set("Accept-Ranges", "bytes")
	return &simnet.Response{Status: http.StatusOK, Header: h, Body: data}
}

// dirList is Go's listing of a directory without index.html.
func (f fileServer) dirList(dir string, h http.Header) *simnet.Response {
	entries, err := f.fs.ReadDir(dir)
	if err != nil {
		return httpError(http.StatusInternalServerError, "Error reading directory")
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n")
	for _, n := range names {
		u := url.URL{Path: n}
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", u.String(), html.EscapeString(n))
	}
	b.WriteString("</pre>\n")
	h.Set("Content-Type", "text/html; charset=utf-8")
	return &simnet.Response{Status: http.StatusOK, Header: h, Body: []byte(b.String())}
}

// localRedirect is Go's: a 301 to a relative location, the query kept, no body.
func (f fileServer) localRedirect(req *simnet.Request, loc string) *simnet.Response {
	if _, q, ok := strings.Cut(req.Target, "?"); ok && q != "" {
		loc += "?" + q
	}
	h := http.Header{}
	h.Set("Location", loc)
	return &simnet.Response{Status: http.StatusMovedPermanently, Header: h}
}

// fsError is Go's toHTTPError.
func fsError(err error) *simnet.Response {
	switch e := vfs.ErrnoOf(err); {
	case e == vfs.ENOENT || e == vfs.ENOTDIR || e == vfs.ELOOP:
		return httpError(http.StatusNotFound, "404 page not found")
	case e == vfs.EACCES || e.Is(fs.ErrPermission):
		return httpError(http.StatusForbidden, "403 Forbidden")
	}
	return httpError(http.StatusInternalServerError, "500 Internal Server Error")
}
