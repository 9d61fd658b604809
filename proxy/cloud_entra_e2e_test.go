package proxy_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// entraAuthority is a Microsoft Entra ID authority on loopback (TLS, as MSAL requires):
// the tenant's OpenID metadata and its v2.0 token endpoint, which grants a client
// credentials request (grant_type client_credentials with the right client id, secret
// and scope) a bearer token, token-1, token-2, ... one per grant. The metadata's fields
// are those MSAL reads (azidentity's own mockSTS serves the same: token_endpoint, issuer,
// authorization_endpoint); the token answer is the v2.0 endpoint's
// {"token_type":"Bearer","expires_in":...,"access_token":...}.
type entraAuthority struct {
	srv                    *httptest.Server
	tenant, client, secret string
	// assertion, when set, is the client assertion a grant must carry instead of the
	// secret (workload identity: the federated token file's content).
	assertion string
	grants    atomic.Int32
	mu        sync.Mutex
	refused   []string
}

func newEntraAuthority(t *testing.T, tenant, client, secret string) *entraAuthority {
	a := &entraAuthority{tenant: tenant, client: client, secret: secret}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := "https://" + r.Host + "/" + a.tenant
		switch r.URL.Path {
		case "/" + a.tenant + "/v2.0/.well-known/openid-configuration":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"token_endpoint":%q,"issuer":%q,"authorization_endpoint":%q}`,
				base+"/oauth2/v2.0/token", base+"/v2.0", base+"/oauth2/v2.0/authorize")
		case "/" + a.tenant + "/oauth2/v2.0/token":
			body, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(body))
			if why := a.check(form); why != "" {
				a.mu.Lock()
				a.refused = append(a.refused, why)
				a.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":"invalid_client","error_description":"AADSTS7000215: %s"}`, why)
				return
			}
			n := a.grants.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,"access_token":"entra-token-%d"}`, n)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *entraAuthority) check(form url.Values) string {
	switch {
	case form.Get("grant_type") != "client_credentials":
		return "grant_type " + form.Get("grant_type")
	case form.Get("client_id") != a.client:
		return "unknown client_id"
	case a.assertion != "" && (form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" ||
		form.Get("client_assertion") != a.assertion || form.Has("client_secret")):
		return "the client assertion is not the federated token"
	case a.assertion == "" && form.Get("client_secret") != a.secret:
		return "invalid client secret provided"
	case !slices.Contains(strings.Fields(form.Get("scope")), "https://cognitiveservices.azure.com/.default"):
		// MSAL adds openid offline_access profile to the resource's scope
		return "scope " + form.Get("scope")
	}
	return ""
}

// TestAzure_EntraClientCredentials: an azure backend without api_key gets a Microsoft
// Entra ID token by the client credentials flow (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_CLIENT_SECRET) from the authority through azidentity, sends it as
// Authorization: Bearer (and no api-key), and reuses it: one grant for four requests,
// whole and streamed.
func TestAzure_EntraClientCredentials(t *testing.T) {
	const tenant, client, secret = "8f2c1d3e-tenant", "client-app-id", "s3cr3t-client-value"
	t.Setenv("AZURE_TENANT_ID", tenant)
	t.Setenv("AZURE_CLIENT_ID", client)
	t.Setenv("AZURE_CLIENT_SECRET", secret)
	authority := newEntraAuthority(t, tenant, client, secret)
	up := newCloudFake(t, func(r *http.Request) string {
		switch {
		case r.Header.Get("Authorization") != "Bearer entra-token-1":
			return "Unauthorized. Access token is missing, invalid, audience is incorrect, or have expired."
		case r.Header.Get("api-key") != "":
			return "unexpected api-key"
		}
		return ""
	}, recording(t, "translate/openai/testdata/azure-stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure:
      api_version: 2024-10-21
      credential: client_secret
      authority_host: `+authority.srv.URL+`/
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, CredentialClient: authority.srv.Client()})
	client1 := gatewaytest.OpenAI(g.V1(), "client-key")
	for range 2 {
		whole, streamed := chatBoth(t, client1, "mini")
		if whole != "4200 + 42 equals 4242." || streamed != whole {
			t.Errorf("answers %q, %q", whole, streamed)
		}
	}
	if n := authority.grants.Load(); n != 1 {
		t.Errorf("%d token grants for 4 requests, want 1 (cached)", n)
	}
	if len(authority.refused) > 0 {
		t.Errorf("the authority refused: %v", authority.refused)
	}
}

// TestAzure_EntraRefused: a secret the authority refuses is a 502 upstream_auth_failed
// that names the backend and the credential's source, and quotes neither the secret nor
// the authority's answer.
func TestAzure_EntraRefused(t *testing.T) {
	const tenant = "tenant-x"
	t.Setenv("AZURE_TENANT_ID", tenant)
	t.Setenv("AZURE_CLIENT_ID", "client-app-id")
	t.Setenv("AZURE_CLIENT_SECRET", "wrong-s3cr3t")
	authority := newEntraAuthority(t, tenant, "client-app-id", "right-secret")
	up := newCloudFake(t, func(*http.Request) string { return "" }, nil, nil)
	logs := &gatewaytest.Buffer{}
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure: {credential: client_secret, authority_host: `+authority.srv.URL+`/}
models:
  mini: {backend: aoai}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, CredentialClient: authority.srv.Client(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	resp, err := http.Post(g.V1()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(body), `"upstream_auth_failed"`) ||
		!strings.Contains(string(body), "aoai") || !strings.Contains(string(body), "AZURE_CLIENT_SECRET") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	for _, leak := range []string{"wrong-s3cr3t", "AADSTS"} {
		if strings.Contains(string(body), leak) || strings.Contains(logs.String(), leak) {
			t.Errorf("%q leaked: body %s\nlogs %s", leak, body, logs.String())
		}
	}
	if len(up.seen()) != 0 {
		t.Errorf("the upstream was called without a token: %v", up.seen())
	}
}
