package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agate-gateway/agate/cloudauth"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
	"github.com/agate-gateway/agate/upstream"
)

// The cloud backends (azure, vertex, bedrock) are the existing dialects composed with a
// cloud's URLs, authentication and framing: a cloud's provider gives the dialect's
// requests the cloud's paths (cloudProvider; bedrockProvider, which also picks Claude's
// or Converse's dialect per model), and a cloudauth signer sets the credentials on each
// request once it is final (upstream.Signer: a short-lived bearer token, or a SigV4
// signature). No dialect knows of the clouds beyond one option, anthropic.NewCloud's body.
// Adding a cloud is a row of cloudOf and a cloudauth signer.

// cloud is how one cloud backend type is built.
type cloud struct {
	// provider is the backend's dialect under the cloud's paths.
	provider func(config.Backend) translate.Provider
	// signer returns the signer of the backend's requests; a nil Signer means the
	// provider's headers (the backend's api_key) authenticate them alone.
	signer func(name string, bc config.Backend, env cloudEnv) (upstream.Signer, error)
	// framing is how the cloud frames a streamed answer.
	framing upstream.Framing
	// missing reports that the backend's credential is certainly absent
	// (missingCredential); nil is never.
	missing func(config.Backend) bool
	// credential is the config key an operator checks when the cloud rejects the
	// gateway's credential (credentialFault); nil is api_key.
	credential func(config.Backend) string
}

// cloudOf returns the cloud of a backend type, false for a type that is not a cloud's:
// the one table of the cloud backends.
func cloudOf(typ string) (cloud, bool) {
	switch typ {
	case "azure":
		return cloud{provider: azureProvider, signer: azureSigner, missing: azureMissing, credential: azureCredential}, true
	case "vertex":
		return cloud{provider: vertexProvider, signer: vertexSigner, credential: vertexCredential}, true
	case "bedrock":
		return cloud{provider: func(config.Backend) translate.Provider { return newBedrockProvider() }, signer: bedrockSigner,
			framing: upstream.FramingEventStream, credential: bedrockCredential}, true
	}
	return cloud{}, false
}

// configure sets the cloud's framing and signer on ub, the upstream options of backend
// name. A backend whose credential is missing gets no signer: its models are refused
// before any request is made (missingCredential).
func (c cloud) configure(name string, bc config.Backend, env cloudEnv, ub *upstream.Backend) error {
	ub.Framing = c.framing
	if c.lacksCredential(bc) {
		return nil
	}
	signer, err := c.signer(name, bc, env)
	if err != nil {
		return err
	}
	ub.Signer = signer
	return nil
}

// lacksCredential reports whether bc, a backend of this cloud, certainly lacks its
// credential. It is the one rule of the cloud backends (missingCredential): a credential
// configured empty, or a credential source named in config whose environment is not set,
// is missing; a credential a chain may find at run time (the AWS and Azure default chains,
// managed identity, instance and container roles, Application Default Credentials and the
// metadata server) is taken to be there, and if it is not, each request fails with the
// 502 upstream_auth_failed naming where the credentials were looked for.
func (c cloud) lacksCredential(bc config.Backend) bool { return c.missing != nil && c.missing(bc) }

// credentialKey is the config key of b's credential, which an upstream's rejection of it
// sends the operator to (credentialFault): api_key, or a cloud's credential.
func (b *backend) credentialKey() string {
	if c, ok := cloudOf(b.typ); ok && c.credential != nil {
		return c.credential(b.cfg)
	}
	return "api_key"
}

// cloudEnv is what the cloud credentials take from the server's Options rather than from
// config: the HTTP client their token requests use.
type cloudEnv struct {
	// client fetches tokens and credentials (Entra ID authority, Google token endpoint,
	// AWS STS and metadata endpoints); nil is each library's default.
	client *http.Client
	// aws, when set, replaces the AWS default credential chain of the bedrock backends
	// that sign with SigV4 (Options.AWSCredentials); nil is the chain.
	aws aws.CredentialsProvider
}

// cloudProvider is an upstream dialect under a cloud's paths and auth headers.
type cloudProvider struct {
	translate.Provider
	path func(upstreamModel string, stream bool) string
	// apiKeyHeader, when set, carries the backend's api_key (Azure's api-key); else the
	// request is authenticated by the backend's signer alone.
	apiKeyHeader string
	// embed is the cloud's embeddings (embedSource); nil when it has none.
	embed translate.Embedder
}

func (p cloudProvider) embedder() translate.Embedder { return p.embed }

// pathEmbedder is an Embedder under a cloud's path.
type pathEmbedder struct {
	translate.Embedder
	path func(upstreamModel string) string
}

func (p pathEmbedder) EmbedPath(upstreamModel string) string { return p.path(upstreamModel) }

// ContextExceeded implements translate.ContextLimit with the dialect's own recognition
// (Claude's, Gemini's, OpenAI's), so a model's context_fallbacks apply on the clouds
// too: the embedded Provider's method set does not carry it.
func (p cloudProvider) ContextExceeded(e *translate.UpstreamError) bool {
	return translate.ContextExceeded(p.Provider, e)
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

// azureProvider is the openai (chat) or responses dialect on an Azure OpenAI resource:
// the v1 surface (/openai/v1/..., the deployment as the model) or, with an api_version,
// the deployment-scoped one. The api-key header carries api_key under auth api_key.
func azureProvider(bc config.Backend) translate.Provider {
	a := bc.Azure
	p := cloudProvider{Provider: openai.New()}
	if a.Auth == "api_key" {
		p.apiKeyHeader = "api-key"
	}
	version := url.QueryEscape(a.APIVersion)
	// Embeddings are OpenAI's on the resource's embedding deployments, whichever API its
	// chat deployments speak.
	embed := pathEmbedder{Embedder: openai.New().(translate.Embedder), path: func(string) string { return "/openai/v1/embeddings" }}
	if version != "" {
		embed.path = func(model string) string {
			return "/openai/deployments/" + url.PathEscape(model) + "/embeddings?api-version=" + version
		}
	}
	p.embed = embed
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
func vertexProvider(bc config.Backend) translate.Provider {
	v := bc.Vertex
	prefix := "/v1/projects/" + url.PathEscape(v.Project) + "/locations/" + url.PathEscape(v.Location) + "/publishers/"
	p := cloudProvider{Provider: gemini.New()}
	stream, whole := ":streamGenerateContent?alt=sse", ":generateContent"
	if v.Publisher == "anthropic" {
		p.Provider = anthropic.NewCloud(anthropic.Cloud{Version: anthropic.VertexVersion})
		prefix += "anthropic/models/"
		stream, whole = ":streamRawPredict", ":rawPredict"
	} else {
		prefix += "google/models/"
		p.embed = gemini.VertexEmbedder{Prefix: prefix}
	}
	p.path = func(model string, streamed bool) string {
		if streamed {
			return prefix + url.PathEscape(model) + stream
		}
		return prefix + url.PathEscape(model) + whole
	}
	return p.wrap()
}

// azureSigner returns an azure backend's signer: Entra ID tokens under auth entra, none
// under auth api_key (the api-key header).
func azureSigner(name string, bc config.Backend, env cloudEnv) (upstream.Signer, error) {
	if bc.Azure.Auth != "entra" {
		return nil, nil
	}
	a := bc.Azure
	return cloudauth.NewAzure(cloudauth.AzureOptions{Backend: name, Credential: a.Credential,
		ManagedIdentityClientID: a.ManagedIdentityClientID, AuthorityHost: a.AuthorityHost, Scope: a.Scope, HTTPClient: env.client})
}

// vertexSigner returns a vertex backend's signer: Google OAuth2 tokens.
func vertexSigner(name string, bc config.Backend, env cloudEnv) (upstream.Signer, error) {
	return cloudauth.NewGoogle(cloudauth.GoogleOptions{Backend: name, CredentialsFile: bc.Vertex.CredentialsFile, HTTPClient: env.client})
}

// bedrockSigner returns a bedrock backend's signer: SigV4 from the AWS default credential
// chain (its profile) or, when the server was given some, Options.AWSCredentials; or its
// api_key as a bearer token.
func bedrockSigner(name string, bc config.Backend, env cloudEnv) (upstream.Signer, error) {
	s, err := cloudauth.NewAWS(context.Background(), cloudauth.AWSOptions{Backend: name, Region: bc.Bedrock.Region,
		Profile: bc.Bedrock.Profile, APIKey: strings.TrimSpace(bc.APIKey), HTTPClient: env.client, Credentials: env.aws})
	if err != nil {
		return nil, fmt.Errorf("backends.%s.bedrock: %w", name, err)
	}
	return s, nil
}

// azureMissing reports whether an azure backend certainly lacks its credential
// (cloud.lacksCredential): auth api_key without a key, or an entra client_secret or
// workload_identity credential without its environment.
func azureMissing(bc config.Backend) bool {
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

// The config keys a rejected cloud credential sends the operator to (cloud.credential).
func azureCredential(bc config.Backend) string {
	if bc.Azure.Auth == "entra" {
		return "azure.credential (the identity and its role on the resource)"
	}
	return "api_key"
}

func vertexCredential(config.Backend) string {
	return "vertex (its credentials and their Vertex AI role)"
}

func bedrockCredential(bc config.Backend) string {
	if strings.TrimSpace(bc.APIKey) != "" {
		return "api_key"
	}
	return "bedrock (its AWS credentials and their permission to invoke the model)"
}
