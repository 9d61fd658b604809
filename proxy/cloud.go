package proxy

import (
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/agate-gateway/agate/cloudauth"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
	"github.com/agate-gateway/agate/upstream"
)

// The cloud backends (azure, vertex) are the existing dialects composed with a cloud's
// URLs and authentication: a cloudProvider gives the dialect's requests the cloud's paths
// and auth headers, and a cloudauth signer sets a short-lived bearer token on each request
// (upstream.Signer). No dialect knows of the clouds beyond an option (anthropic's
// BodyVersion).

// cloudEnv is what the cloud credentials take from the server's Options rather than from
// config: the HTTP client their token requests use.
type cloudEnv struct {
	// client fetches tokens (Entra ID authority, Google token endpoint); nil is each
	// library's default.
	client *http.Client
}

// cloudProvider is an upstream dialect under a cloud's paths and auth headers.
type cloudProvider struct {
	translate.Provider
	path func(upstreamModel string, stream bool) string
	// apiKeyHeader, when set, carries the backend's api_key (Azure's api-key); else the
	// request is authenticated by the backend's signer alone.
	apiKeyHeader string
}

func (p cloudProvider) Path(upstreamModel string, stream bool) string {
	return p.path(upstreamModel, stream)
}

func (p cloudProvider) Headers(apiKey string) []translate.Header {
	if p.apiKeyHeader == "" || apiKey == "" {
		return nil
	}
	return []translate.Header{{Name: p.apiKeyHeader, Value: apiKey}}
}

// literalCloudProvider is a cloudProvider whose dialect reads the request's strings as
// the lazy parse leaves them (translate.LiteralReader).
type literalCloudProvider struct{ cloudProvider }

func (literalCloudProvider) ReadsLiterals() {}

// wrap returns p as a translate.Provider, a LiteralReader when its dialect is one.
func (p cloudProvider) wrap() translate.Provider {
	if _, ok := p.Provider.(translate.LiteralReader); ok {
		return literalCloudProvider{p}
	}
	return p
}

// cloudProviderFor returns the provider of a cloud backend (azure, vertex), false for
// any other type.
func cloudProviderFor(bc config.Backend) (translate.Provider, bool) {
	switch bc.Type {
	case "azure":
		return azureProvider(bc.Azure), true
	case "vertex":
		return vertexProvider(bc.Vertex), true
	}
	return nil, false
}

// azureProvider is the openai (chat) or responses dialect on an Azure OpenAI resource:
// the v1 surface (/openai/v1/..., the deployment as the model) or, with an api_version,
// the deployment-scoped one. The api-key header carries api_key under auth api_key.
func azureProvider(a config.Azure) translate.Provider {
	p := cloudProvider{Provider: openai.New()}
	if a.Auth == "api_key" {
		p.apiKeyHeader = "api-key"
	}
	version := url.QueryEscape(a.APIVersion)
	switch {
	case a.API == "responses":
		p.Provider = responses.New()
		path := "/openai/v1/responses"
		if version != "" {
			path = "/openai/responses?api-version=" + version
		}
		p.path = func(string, bool) string { return path }
	case version != "":
		p.path = func(model string, _ bool) string {
			return "/openai/deployments/" + url.PathEscape(model) + "/chat/completions?api-version=" + version
		}
	default:
		p.path = func(string, bool) string { return "/openai/v1/chat/completions" }
	}
	return p.wrap()
}

// vertexProvider is the gemini (publisher google) or anthropic (publisher anthropic)
// dialect on Vertex AI's publisher model paths.
func vertexProvider(v config.Vertex) translate.Provider {
	prefix := "/v1/projects/" + url.PathEscape(v.Project) + "/locations/" + url.PathEscape(v.Location) + "/publishers/"
	p := cloudProvider{Provider: gemini.New()}
	stream, whole := ":streamGenerateContent?alt=sse", ":generateContent"
	if v.Publisher == "anthropic" {
		p.Provider = anthropic.NewWith(anthropic.Options{BodyVersion: "vertex-2023-10-16"})
		prefix += "anthropic/models/"
		stream, whole = ":streamRawPredict", ":rawPredict"
	} else {
		prefix += "google/models/"
	}
	p.path = func(model string, streamed bool) string {
		if streamed {
			return prefix + url.PathEscape(model) + stream
		}
		return prefix + url.PathEscape(model) + whole
	}
	return p.wrap()
}

// cloudSigner returns the signer of a cloud backend's requests: Entra ID tokens for an
// azure backend under auth entra, Google OAuth2 tokens for a vertex backend; nil for
// every other backend.
func cloudSigner(name string, bc config.Backend, env cloudEnv) (upstream.Signer, error) {
	switch {
	case bc.Type == "azure" && bc.Azure.Auth == "entra":
		return cloudauth.NewAzure(cloudauth.AzureOptions{Backend: name, Credential: bc.Azure.Credential,
			ManagedIdentityClientID: bc.Azure.ManagedIdentityClientID, AuthorityHost: bc.Azure.AuthorityHost,
			Scope: bc.Azure.Scope, HTTPClient: env.client})
	case bc.Type == "vertex":
		return cloudauth.NewGoogle(cloudauth.GoogleOptions{Backend: name, CredentialsFile: bc.Vertex.CredentialsFile, HTTPClient: env.client})
	}
	return nil, nil
}

// cloudCredentialMissing reports whether a cloud backend certainly lacks its credential
// (missingCredential): an azure backend under auth api_key without one, an entra
// client_secret or workload_identity credential without its environment. Credentials
// found at run time (the default chains, managed identity, the metadata server) are
// taken to be there; if they are not, requests fail with 502 upstream_auth_failed.
func cloudCredentialMissing(bc config.Backend) bool {
	if bc.Type != "azure" {
		return false
	}
	switch {
	case bc.Azure.Auth == "api_key":
		return strings.TrimSpace(bc.APIKey) == ""
	case bc.Azure.Credential == "client_secret":
		return os.Getenv("AZURE_TENANT_ID") == "" || os.Getenv("AZURE_CLIENT_ID") == "" || os.Getenv("AZURE_CLIENT_SECRET") == ""
	case bc.Azure.Credential == "workload_identity":
		return os.Getenv("AZURE_FEDERATED_TOKEN_FILE") == ""
	}
	return false
}

// credentialKey is the config key of b's credential, which an upstream's 401 sends the
// operator to (credentialFault): api_key, or the cloud credential of a signed backend.
func (b *backend) credentialKey() string {
	switch {
	case b.typ == "vertex":
		return "vertex (its credentials and their Vertex AI role)"
	case b.typ == "azure" && b.cfg.Azure.Auth == "entra":
		return "azure.credential (the identity and its role on the resource)"
	}
	return "api_key"
}
