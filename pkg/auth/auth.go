package auth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Config is what New needs.
type Config struct {
	// NodeName is the name requests are authorized against (nodes/NAME).
	NodeName string
	// Authentication and Authorization are the KubeletConfiguration's, defaulted.
	Authentication kubeletv1beta1.KubeletAuthentication
	Authorization  kubeletv1beta1.KubeletAuthorization
	// Client is the API server's client for TokenReview and SubjectAccessReview; nil in
	// standalone mode, where the webhooks cannot be used.
	Client kubernetes.Interface
	// FineGrainedAuthz is the KubeletFineGrainedAuthz gate (GA and locked on since v1.36).
	FineGrainedAuthz bool
}

// webhookRetryBackoff is the apiserver's DefaultAuthWebhookRetryBackoff, which the kubelet
// uses for both webhooks.
func webhookRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// Auth is the secure port's authenticator and authorizer.
type Auth struct {
	nodeName string
	// fineGrained is KubeletFineGrainedAuthz: /pods, /healthz, /configz, ... are
	// authorized as nodes/pods, nodes/healthz, nodes/configz before nodes/proxy.
	fineGrained bool
	authn       authenticator.Request
	authz       authorizer.Authorizer
}

// New builds them as the kubelet's BuildAuth: the delegating authenticator (x509 client
// certificates from clientCAFile, bearer tokens through TokenReview, anonymous when
// enabled) and either AlwaysAllow or the delegating SubjectAccessReview authorizer, each
// webhook with its cache TTLs. The webhooks need Client; without it they fail with the
// kubelet's errors.
func New(cfg Config) (*Auth, error) {
	authn, err := buildAuthn(cfg)
	if err != nil {
		return nil, err
	}
	authz, err := buildAuthz(cfg)
	if err != nil {
		return nil, err
	}
	return &Auth{nodeName: cfg.NodeName, fineGrained: cfg.FineGrainedAuthz, authn: authn, authz: authz}, nil
}

func buildAuthn(cfg Config) (authenticator.Request, error) {
	a := cfg.Authentication
	dc := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous: &apiserver.AnonymousAuthConfig{Enabled: a.Anonymous.Enabled != nil && *a.Anonymous.Enabled},
		CacheTTL:  a.Webhook.CacheTTL.Duration,
	}
	if file := a.X509.ClientCAFile; file != "" {
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", file)
		if err != nil {
			return nil, fmt.Errorf("authentication.x509.clientCAFile %s: %w", file, err)
		}
		dc.ClientCertificateCAContentProvider = ca
	}
	if a.Webhook.Enabled != nil && *a.Webhook.Enabled {
		if cfg.Client == nil {
			return nil, errors.New("authentication.webhook.enabled: no client provided, cannot use webhook authentication (standalone mode has no API server: set authentication.webhook.enabled false, or --authentication-token-webhook=false)")
		}
		dc.TokenAccessReviewClient = cfg.Client.AuthenticationV1()
		dc.WebhookRetryBackoff = webhookRetryBackoff()
	}
	authn, _, err := dc.New()
	if err != nil {
		return nil, fmt.Errorf("build the secure port's authenticator: %w", err)
	}
	return authn, nil
}

func buildAuthz(cfg Config) (authorizer.Authorizer, error) {
	z := cfg.Authorization
	switch z.Mode {
	case kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow:
		return authorizerfactory.NewAlwaysAllowAuthorizer(), nil
	case kubeletv1beta1.KubeletAuthorizationModeWebhook:
		if cfg.Client == nil {
			return nil, errors.New("authorization.mode Webhook: no client provided, cannot use webhook authorization (standalone mode has no API server: use authorization.mode AlwaysAllow, or --authorization-mode=AlwaysAllow)")
		}
		return authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: cfg.Client.AuthorizationV1(),
			AllowCacheTTL:             z.Webhook.CacheAuthorizedTTL.Duration,
			DenyCacheTTL:              z.Webhook.CacheUnauthorizedTTL.Duration,
			WebhookRetryBackoff:       webhookRetryBackoff(),
		}.New()
	}
	return nil, fmt.Errorf("authorization.mode %q: unknown authorization mode", z.Mode)
}

// The paths whose own subresource the kubelet authorizes before nodes/proxy
// (KubeletFineGrainedAuthz, GA in v1.36): a request to them is allowed by either.
var fineGrained = []struct{ path, subresource string }{
	{"/allocatedPods", "pods"},
	{"/pods", "pods"},
	{"/healthz", "healthz"},
	{"/configz", "configz"},
	{"/runningpods", "pods"},
}

// The path prefixes that narrow the nodes subresource, as the kubelet's
// (pkg/kubelet/server/auth.go); every other path is nodes/proxy.
var subresources = []struct{ path, subresource string }{
	{"/stats", "stats"},
	{"/metrics", "metrics"},
	{"/logs", "log"},
	{"/checkpoint", "checkpoint"},
	{"/statusz", "statusz"},
	{"/flagz", "configz"},
}

// verbs maps HTTP methods to API verbs; anything else (HEAD too) gets an empty verb, as
// upstream.
var verbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// Attributes are the authorization attributes of a request by u, in the order they are
// tried: verb from the method, resource nodes named after the node, one per subresource the
// path may be allowed by (its fine-grained one, when it has one and the gate is on, then
// stats, metrics, log, ... or proxy).
func (a *Auth) Attributes(u user.Info, r *http.Request) []authorizer.AttributesRecord {
	var subs []string
	if a.fineGrained {
		for _, s := range fineGrained {
			if isSubpath(r.URL.Path, s.path) {
				subs = append(subs, s.subresource)
				break
			}
		}
	}
	sub := "proxy"
	for _, s := range subresources {
		if isSubpath(r.URL.Path, s.path) {
			sub = s.subresource
			break
		}
	}
	subs = append(subs, sub)
	attrs := make([]authorizer.AttributesRecord, len(subs))
	for i, sub := range subs {
		attrs[i] = authorizer.AttributesRecord{
			User:            u,
			Verb:            verbs[r.Method],
			APIVersion:      "v1",
			Resource:        "nodes",
			Subresource:     sub,
			Name:            a.nodeName,
			ResourceRequest: true,
			Path:            r.URL.Path,
		}
	}
	return attrs
}

// isSubpath reports whether path is prefix or below it.
func isSubpath(path, prefix string) bool {
	path = strings.TrimSuffix(path, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Wrap answers 401 to a request no authenticator accepts and 403 to one the authorizer
// does not allow, with the kubelet's messages; others go to next.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		resp, ok, err := a.authn.AuthenticateRequest(r)
		if err != nil {
			logger.Error(err, "Unable to authenticate the request due to an error")
		}
		if err != nil || !ok {
			writeString(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := a.Attributes(resp.User, r)
		subs := make([]string, 0, len(attrs))
		allowed := false
		for _, attr := range attrs {
			subs = append(subs, attr.Subresource)
			decision, _, err := a.authz.Authorize(r.Context(), attr)
			if err != nil {
				logger.Error(err, "Authorization error", "user", attr.GetUser().GetName(), "verb", attr.GetVerb(), "resource", attr.GetResource(), "subresource", attr.GetSubresource())
				writeString(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", attr.GetUser().GetName(), attr.GetVerb(), attr.GetResource(), attr.GetSubresource()))
				return
			}
			if decision == authorizer.DecisionAllow {
				allowed = true
				break
			}
		}
		if !allowed {
			// The attributes differ only by subresource: the first names the rest.
			first := attrs[0]
			logger.V(2).Info("Forbidden", "user", first.GetUser().GetName(), "verb", first.GetVerb(), "resource", first.GetResource(), "subresource(s)", subs)
			writeString(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n", first.GetUser().GetName(), first.GetVerb(), first.GetResource(), subs))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeString answers status with body as it is, as go-restful's WriteErrorString does
// for the kubelet (http.Error would add a newline).
func writeString(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
