package auth

import (
	"errors"
	"fmt"
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
}

// webhookRetryBackoff is the apiserver's DefaultAuthWebhookRetryBackoff, which the kubelet
// uses for both webhooks.
func webhookRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// Auth is the secure port's authenticator and authorizer.
type Auth struct {
	nodeName string
	authn    authenticator.Request
	authz    authorizer.Authorizer
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
	return &Auth{nodeName: cfg.NodeName, authn: authn, authz: authz}, nil
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

// The path prefixes that narrow the nodes subresource, as the kubelet's
// (pkg/kubelet/server/auth.go); every other path is nodes/proxy.
var subresources = []struct{ path, subresource string }{
	{"/stats", "stats"},
	{"/metrics", "metrics"},
	{"/logs", "log"},
	{"/spec", "spec"},
	{"/checkpoint", "checkpoint"},
}

// verbs maps HTTP methods to API verbs; anything else gets an empty verb, as upstream.
var verbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodHead:   "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// Attributes are the authorization attributes of a request by u: verb from the method,
// resource nodes named after the node, subresource from the path.
func (a *Auth) Attributes(u user.Info, r *http.Request) authorizer.AttributesRecord {
	attrs := authorizer.AttributesRecord{
		User:            u,
		Verb:            verbs[r.Method],
		APIVersion:      "v1",
		Resource:        "nodes",
		Subresource:     "proxy",
		Name:            a.nodeName,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}
	for _, s := range subresources {
		if isSubpath(r.URL.Path, s.path) {
			attrs.Subresource = s.subresource
			break
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
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := a.Attributes(resp.User, r)
		who := fmt.Sprintf("user=%s, verb=%s, resource=%s, subresource=%s", attrs.GetUser().GetName(), attrs.GetVerb(), attrs.GetResource(), attrs.GetSubresource())
		decision, reason, err := a.authz.Authorize(r.Context(), attrs)
		if err != nil {
			logger.Error(err, "Authorization error", "user", attrs.GetUser().GetName(), "verb", attrs.GetVerb(), "resource", attrs.GetResource(), "subresource", attrs.GetSubresource())
			http.Error(w, "Authorization error ("+who+")", http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			logger.V(2).Info("Forbidden", "user", attrs.GetUser().GetName(), "verb", attrs.GetVerb(), "resource", attrs.GetResource(), "subresource", attrs.GetSubresource(), "reason", reason)
			http.Error(w, "Forbidden ("+who+")", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
