package proxy_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The credential sources of the three clouds, each run end to end through the cloud's
// own library (azidentity, golang.org/x/oauth2/google, the AWS SDK's default chain)
// against loopback fakes of the services those libraries ask, configured only through
// the environment variables the libraries read. Each fake answers in the service's real
// format; the sources of each format are named at the fake. Every test clears the
// clouds' environment first (clearCloudEnv), so none can reach a real cloud.

// clearCloudEnv unsets every variable through which the clouds' credential libraries
// find credentials, points HOME (gcloud's and AWS's files) at an empty directory and
// turns the EC2 instance metadata off.
func clearCloudEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_SSO", "AWS_ENDPOINT_URL_SSO_OIDC", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST",
		"AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME", "IDENTITY_ENDPOINT", "IDENTITY_HEADER",
		"IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT", "MSI_ENDPOINT", "MSI_SECRET",
		"GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG",
	} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "no-aws-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// writeSecret writes content to a new file and returns its path.
func writeSecret(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bearer is the check of a cloud fake that accepts only the bearer token want.
func bearer(want string) func(r *http.Request) string {
	return func(r *http.Request) string {
		if r.Header.Get("Authorization") != "Bearer "+want {
			return "Request had invalid authentication credentials."
		}
		if r.Header.Get("api-key") != "" || r.Header.Get("x-goog-api-key") != "" {
			return "unexpected api key header"
		}
		return ""
	}
}

// tokenService is a loopback credential service (a token endpoint, a metadata server, an
// STS): handle answers each request, returning a refusal reason it records, or "".
type tokenService struct {
	srv     *httptest.Server
	calls   atomic.Int32
	mu      sync.Mutex
	refused []string
}

func newTokenService(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte) string) *tokenService {
	s := &tokenService{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if why := handle(w, r, body); why != "" {
			s.mu.Lock()
			s.refused = append(s.refused, why)
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *tokenService) refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// checkTwoChats asks model for a chat answer whole and streamed, twice, and checks each
// names want; the credential service must have been asked once (the token is cached).
func checkTwoChats(t *testing.T, g *gatewaytest.Gateway, model, want string, grants func() int32) {
	t.Helper()
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	for range 2 {
		whole, streamed := chatBoth(t, client, model)
		if !strings.Contains(whole, want) || !strings.Contains(streamed, want) {
			t.Errorf("answers %q, %q; want %q", whole, streamed, want)
		}
	}
	if n := grants(); n != 1 {
		t.Errorf("%d credential grants for 4 requests, want 1 (cached)", n)
	}
}

// azureAnswers is a loopback Azure OpenAI resource accepting only the bearer token.
func azureAnswers(t *testing.T, token string) *cloudFake {
	return newCloudFake(t, bearer(token),
		recording(t, "translate/openai/testdata/azure-stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
}

// TestAzure_WorkloadIdentity: credential workload_identity reads AKS's projected
// environment (AZURE_FEDERATED_TOKEN_FILE, AZURE_CLIENT_ID, AZURE_TENANT_ID and
// AZURE_AUTHORITY_HOST, none of them in the gateway's config): azidentity sends the token
// file's content as the client assertion of a client credentials grant to the authority
// the environment names, and the token it grants authenticates the requests. An
// AZURE_AUTHORITY_HOST that is not a known cloud's has its metadata asked of itself, as a
// configured authority_host does (no instance discovery at login.microsoft.com).
func TestAzure_WorkloadIdentity(t *testing.T) {
	clearCloudEnv(t)
	const tenant, client = "72f988bf-tenant", "wi-client-id"
	const projected = "eyJhbGciOiJSUzI1NiIsImtpZCI6Imsxcy1zYSJ9.eyJhdWQiOlsiYXBpOi8vQXp1cmVBRFRva2VuRXhjaGFuZ2UiXX0.c2lnbmF0dXJl"
	authority := newEntraAuthority(t, tenant, client, "")
	authority.assertion = projected
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", writeSecret(t, "azure-identity-token", projected))
	t.Setenv("AZURE_CLIENT_ID", client)
	t.Setenv("AZURE_TENANT_ID", tenant)
	t.Setenv("AZURE_AUTHORITY_HOST", authority.srv.URL+"/")
	up := azureAnswers(t, "entra-token-1")
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure: {api_version: 2024-10-21, credential: workload_identity}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, CredentialClient: authority.srv.Client()})
	checkTwoChats(t, g, "mini", "4242", authority.grants.Load)
	if len(authority.refused) > 0 {
		t.Errorf("the authority refused: %v", authority.refused)
	}
}

// freshIdentity returns a user-assigned managed identity's client ID (a random UUID) and
// freshResource a resource (an Entra application ID URI, api://<random UUID>) no test of
// this process asked a token for before. MSAL keeps managed identity tokens in a cache of
// the process, package-level in its managedidentity package (cacheManager), keyed by
// identity and resource, which no caller can clear: a token an earlier test (or an
// earlier -test.count repetition of the same test) was granted would answer instead of
// the identity endpoint under test. The gateway binary shares that cache between its
// azure backends and across reloads, which is as it should be: one identity's token for
// one resource.
func freshIdentity(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // version 4, RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func freshResource(t *testing.T) string { return "api://" + freshIdentity(t) }

// appServiceIdentity is an App Service managed identity endpoint on loopback (the one
// IDENTITY_ENDPOINT and IDENTITY_HEADER name; azidentity's ManagedIdentityCredential asks
// it through MSAL's managedidentity source "AppService"). It answers a GET with
// api-version 2019-08-01, the resource, the user-assigned identity's client_id and the
// X-IDENTITY-HEADER secret with the token shape Microsoft documents for App Service
// ("Connect to Azure services in app code": access_token, expires_on in Unix seconds as a
// string, resource, token_type, client_id), as azidentity's own tests
// (managed_identity_credential_test.go) answer it.
func appServiceIdentity(t *testing.T, header, clientID string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		q := r.URL.Query()
		why := ""
		switch {
		case r.Method != http.MethodGet || r.URL.Path != "/msi/token":
			why = r.Method + " " + r.URL.Path
		case r.Header.Get("X-IDENTITY-HEADER") != header:
			why = "X-IDENTITY-HEADER"
		case q.Get("api-version") != "2019-08-01":
			why = "api-version " + q.Get("api-version")
		case q.Get("resource") != "https://cognitiveservices.azure.com":
			why = "resource " + q.Get("resource")
		case q.Get("client_id") != clientID:
			why = "client_id " + q.Get("client_id")
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if why != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"statusCode":400,"message":"Unable to load the proper Managed Identity."}`)
			return why
		}
		fmt.Fprintf(w, `{"access_token":"mi-token-1","expires_on":"%d","resource":"https://cognitiveservices.azure.com","token_type":"Bearer","client_id":%q}`,
			time.Now().Add(time.Hour).Unix(), clientID)
		return ""
	})
}

// TestAzure_ManagedIdentity: credential managed_identity with a user-assigned identity
// (managed_identity_client_id) on App Service: azidentity asks IDENTITY_ENDPOINT with the
// IDENTITY_HEADER secret for the resource's token, and that token authenticates the
// requests, asked once.
func TestAzure_ManagedIdentity(t *testing.T) {
	clearCloudEnv(t)
	const header = "app-service-identity-header-secret"
	clientID := freshIdentity(t) // not one an earlier test's token is cached for
	mi := appServiceIdentity(t, header, clientID)
	t.Setenv("IDENTITY_ENDPOINT", mi.srv.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", header)
	up := azureAnswers(t, "mi-token-1")
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure: {api_version: 2024-10-21, credential: managed_identity, managed_identity_client_id: `+clientID+`}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	checkTwoChats(t, g, "mini", "4242", mi.calls.Load)
	if r := mi.refusals(); len(r) > 0 {
		t.Errorf("the identity endpoint refused: %v", r)
	}
}

// gceMetadata is a GCE metadata server on loopback (GCE_METADATA_HOST), as
// cloud.google.com/go/compute/metadata asks it: every request must carry
// Metadata-Flavor: Google, and every answer carries it back. It serves the project id,
// the universe domain and the default service account's token
// (instance/service-accounts/default/token?scopes=...), whose JSON is
// {"access_token","expires_in","token_type"} (Compute Engine's "Authenticate workloads
// using service accounts" page; the shape golang.org/x/oauth2/google's computeSource
// decodes).
// grants counts the tokens it granted.
func gceMetadata(t *testing.T, token string) (md *tokenService, grants *atomic.Int32) {
	grants = &atomic.Int32{}
	md = newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.WriteHeader(http.StatusForbidden)
			return "Metadata-Flavor"
		}
		w.Header().Set("Metadata-Flavor", "Google")
		switch r.URL.Path {
		case "/computeMetadata/v1/project/project-id":
			w.Header().Set("Content-Type", "application/text")
			io.WriteString(w, "my-proj")
		case "/computeMetadata/v1/universe/universe-domain":
			w.Header().Set("Content-Type", "application/text")
			io.WriteString(w, "googleapis.com")
		case "/computeMetadata/v1/instance/service-accounts/default/token":
			if !strings.Contains(r.URL.Query().Get("scopes"), "https://www.googleapis.com/auth/cloud-platform") {
				w.WriteHeader(http.StatusBadRequest)
				return "scopes " + r.URL.Query().Get("scopes")
			}
			if token == "" {
				w.WriteHeader(http.StatusNotFound)
				return "no service account"
			}
			grants.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, token)
		default:
			w.WriteHeader(http.StatusNotFound)
			return "path " + r.URL.Path
		}
		return ""
	})
	return md, grants
}

// TestVertex_MetadataServer: a vertex backend without credentials_file and no
// GOOGLE_APPLICATION_CREDENTIALS nor gcloud file finds Application Default Credentials
// on the metadata server (GCE_METADATA_HOST), whose default service account's token
// authenticates the requests. (The metadata package memoizes whether it runs on GCE for
// the whole test binary: every other vertex test configures a credentials_file, so none
// asks before this one.)
func TestVertex_MetadataServer(t *testing.T) {
	clearCloudEnv(t)
	md, grants := gceMetadata(t, "ya29.metadata-1")
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.srv.URL, "http://"))
	up := newCloudFake(t, bearer("ya29.metadata-1"),
		recording(t, "translate/gemini/testdata/stream-text-basic.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/gemini/testdata/json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: us-central1}
models:
  flash: {backend: vx, upstream_model: gemini-2.5-flash}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	checkTwoChats(t, g, "flash", "4242", grants.Load)
	if r := md.refusals(); len(r) > 0 {
		t.Errorf("the metadata server refused: %v", r)
	}
	for _, r := range up.seen() {
		if !strings.HasPrefix(r.uri, "/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:") {
			t.Errorf("upstream URI %q", r.uri)
		}
	}
}

// googleSTS is Google's Security Token Service on loopback (the token_url of an
// external_account credentials file): it grants an RFC 8693 token exchange whose
// subject_token is the workload's token, for the cloud-platform scope and the workload
// identity pool provider's audience. The request and answer fields are those of the STS
// v1 token method (cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token), as
// golang.org/x/oauth2's externalaccount tests record them (baseCredsResponseBody).
func googleSTS(t *testing.T, audience, subject string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, body []byte) string {
		form, _ := url.ParseQuery(string(body))
		why := ""
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/token":
			why = r.Method + " " + r.URL.Path
		case form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
			why = "grant_type"
		case form.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
			why = "requested_token_type"
		case form.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt":
			why = "subject_token_type"
		case form.Get("audience") != audience:
			why = "audience " + form.Get("audience")
		case form.Get("scope") != "https://www.googleapis.com/auth/cloud-platform":
			why = "scope " + form.Get("scope")
		case form.Get("subject_token") != subject:
			why = "subject_token"
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if why != "" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"The incoming token has expired."}`)
			return why
		}
		io.WriteString(w, `{"access_token":"ya29.sts-1","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`)
		return ""
	})
}

// externalAccountFile writes an external_account credentials file (as `gcloud iam
// workload-identity-pools create-cred-config` writes it) whose subject token is read
// from the file subjectPath, exchanged at sts.
func externalAccountFile(t *testing.T, audience, subjectPath string, sts *tokenService) string {
	cred, _ := json.Marshal(map[string]any{
		"type": "external_account", "audience": audience,
		"subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
		"token_url":          sts.srv.URL + "/v1/token",
		"credential_source":  map[string]any{"file": subjectPath, "format": map[string]string{"type": "text"}},
	})
	return writeSecret(t, "external-account.json", string(cred))
}

// TestVertex_WorkloadIdentityFederation: GOOGLE_APPLICATION_CREDENTIALS names an
// external_account file (workload identity federation, e.g. from a Kubernetes service
// account token): golang.org/x/oauth2/google reads the subject token from its file,
// exchanges it at the STS token_url, and the access token the STS issued authenticates
// Claude on Vertex, asked once.
func TestVertex_WorkloadIdentityFederation(t *testing.T) {
	clearCloudEnv(t)
	const audience = "//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/agate-pool/providers/k8s"
	const subject = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YWdhdGU6Z2F0ZXdheSJ9.c2ln"
	sts := googleSTS(t, audience, subject)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", externalAccountFile(t, audience, writeSecret(t, "k8s-token", subject), sts))
	up := newCloudFake(t, bearer("ya29.sts-1"),
		recording(t, "translate/gemini/testdata/stream-text-basic.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/gemini/testdata/json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: global}
models:
  flash: {backend: vx, upstream_model: gemini-2.5-flash}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	checkTwoChats(t, g, "flash", "4242", sts.calls.Load)
	if r := sts.refusals(); len(r) > 0 {
		t.Errorf("the STS refused: %v", r)
	}
}

// verifySigV4 reports whether r carries a SigV4 signature of creds for service and region,
// recomputed with the AWS SDK's own signer over the headers r signed.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, service, region string) bool {
	auth := r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return false
	}
	signed, _, _ := strings.Cut(rest, ",")
	u := *r.URL
	clone := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}, ContentLength: r.ContentLength}
	clone.URL.Scheme, clone.URL.Host = "http", r.Host
	for _, h := range strings.Split(signed, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		clone.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	sum := sha256.Sum256(body)
	if v4.NewSigner().SignHTTP(context.Background(), creds, clone, hex.EncodeToString(sum[:]), service, region, at) != nil {
		return false
	}
	return clone.Header.Get("Authorization") == auth && r.Header.Get("X-Amz-Security-Token") == creds.SessionToken
}

// issued are the temporary credentials the fake AWS credential services hand out.
var issued = aws.Credentials{AccessKeyID: "ASIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
	SessionToken: "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"}

// awsSTS is AWS STS on loopback (AWS_ENDPOINT_URL_STS), speaking the Query protocol:
// AssumeRoleWithWebIdentity (unsigned; its WebIdentityToken must be the token file's
// content) and AssumeRole (SigV4-signed for sts by the source profile's keys, verified
// with the SDK's signer). The XML answers are the STS API reference's, as the AWS SDK's
// own tests answer them (config/shared_test.go: assumeRoleWithWebIdentityResponse,
// assumeRoleRespMsg); a refusal is the Query protocol's ErrorResponse with AccessDenied,
// which the SDK does not retry.
func awsSTS(t *testing.T, role, webToken string, source aws.Credentials) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, body []byte) string {
		form, _ := url.ParseQuery(string(body))
		action := form.Get("Action")
		why := ""
		switch {
		case r.Method != http.MethodPost || form.Get("Version") != "2011-06-15":
			why = "not an STS query request"
		case form.Get("RoleArn") != role:
			why = "RoleArn " + form.Get("RoleArn")
		case action == "AssumeRoleWithWebIdentity" && form.Get("WebIdentityToken") != webToken:
			why = "WebIdentityToken"
		case action == "AssumeRole" && !verifySigV4(r, body, source, "sts", "us-east-1"):
			why = "AssumeRole signature"
		case action != "AssumeRoleWithWebIdentity" && action != "AssumeRole":
			why = "Action " + action
		}
		w.Header().Set("Content-Type", "text/xml")
		if why != "" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:%s</Message></Error><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>`, action)
			return why
		}
		creds := fmt.Sprintf(`<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>`,
			issued.AccessKeyID, issued.SecretAccessKey, issued.SessionToken, time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05Z"))
		user := `<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/agate-bedrock/agate</Arn><AssumedRoleId>AROACLKWSDQRAOEXAMPLE:agate</AssumedRoleId></AssumedRoleUser>`
		if action == "AssumeRole" {
			fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>%s%s</AssumeRoleResult><ResponseMetadata><RequestId>request-id</RequestId></ResponseMetadata></AssumeRoleResponse>`, user, creds)
			return ""
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>system:serviceaccount:agate:gateway</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>%s%s<Provider>oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE</Provider></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>request-id</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`, user, creds)
		return ""
	})
}

// containerCredentials is the ECS/EKS container credentials endpoint on loopback
// (AWS_CONTAINER_CREDENTIALS_FULL_URI): a GET whose Authorization is
// AWS_CONTAINER_AUTHORIZATION_TOKEN's value gets the role's temporary credentials in the
// JSON of the ECS "Task IAM role" page (AccessKeyId, Expiration, RoleArn,
// SecretAccessKey, Token), which the SDK's endpointcreds provider decodes.
func containerCredentials(t *testing.T, authorization string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet || r.Header.Get("Authorization") != authorization {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"code":"AccessDenied","message":"Unable to authorize request"}`)
			return "Authorization"
		}
		fmt.Fprintf(w, `{"AccessKeyId":%q,"Expiration":%q,"RoleArn":"arn:aws:iam::123456789012:role/agate-bedrock","SecretAccessKey":%q,"Token":%q}`,
			issued.AccessKeyID, time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05Z"), issued.SecretAccessKey, issued.SessionToken)
		return ""
	})
}

// startBedrockSigned starts a fake Bedrock that accepts SigV4 signatures of creds only,
// and a gateway whose bedrock backend (extra: more bedrock keys) signs with the AWS
// default credential chain.
func startBedrockSigned(t *testing.T, creds aws.Credentials, extra string) (*fakeBedrock, *gatewaytest.Gateway) {
	f := &fakeBedrock{t: t, creds: creds, region: "us-east-1", bodies: make(chan string, 1), paths: make(chan string, 1)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  aws: {type: bedrock, bedrock: {region: us-east-1%s}, base_url: %q, retries: {max: 0}}
models:
  claude: {backend: aws, upstream_model: "us.anthropic.claude-sonnet-4-20250514-v1:0"}
  nova: {backend: aws, upstream_model: "us.amazon.nova-lite-v1:0"}
`, extra, srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime})
	return f, g
}

// checkBedrockSigned asks claude (InvokeModel) and nova (Converse), whole and streamed,
// and checks the fake verified every request's signature.
func checkBedrockSigned(t *testing.T, f *fakeBedrock, g *gatewaytest.Gateway) {
	t.Helper()
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	for _, model := range []string{"claude", "nova"} {
		whole, streamed := chatBoth(t, client, model)
		if whole == "" || streamed == "" { // the recorded whole and streamed answers differ
			t.Errorf("%s answers %q, %q", model, whole, streamed)
		}
	}
	if f.signed.Load() != 4 || f.rejected.Load() != 0 {
		t.Errorf("the fake verified %d signatures and refused %d, want 4 and 0", f.signed.Load(), f.rejected.Load())
	}
}

// TestBedrock_WebIdentity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (as EKS's IRSA
// sets them) with AWS_ENDPOINT_URL_STS: the SDK's default chain exchanges the token
// file's content at STS AssumeRoleWithWebIdentity, and requests are signed with the
// temporary credentials STS issued (their session token included), asked once.
func TestBedrock_WebIdentity(t *testing.T) {
	clearCloudEnv(t)
	const role, token = "arn:aws:iam::123456789012:role/agate-bedrock", "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsic3RzLmFtYXpvbmF3cy5jb20iXX0.c2ln"
	sts := awsSTS(t, role, token, aws.Credentials{})
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeSecret(t, "eks-token", token))
	t.Setenv("AWS_ROLE_ARN", role)
	t.Setenv("AWS_ROLE_SESSION_NAME", "agate")
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.srv.URL)
	f, g := startBedrockSigned(t, issued, "")
	checkBedrockSigned(t, f, g)
	if n := sts.calls.Load(); n != 1 {
		t.Errorf("STS asked %d times, want 1", n)
	}
	if r := sts.refusals(); len(r) > 0 {
		t.Errorf("STS refused: %v", r)
	}
}

// TestBedrock_ContainerCredentials: AWS_CONTAINER_CREDENTIALS_FULL_URI on loopback with
// AWS_CONTAINER_AUTHORIZATION_TOKEN (ECS, EKS Pod Identity): the chain gets the role's
// credentials from the endpoint, sending the token, and signs with them.
func TestBedrock_ContainerCredentials(t *testing.T) {
	clearCloudEnv(t)
	const authorization = "container-authorization-token-value"
	cc := containerCredentials(t, authorization)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", cc.srv.URL+"/v2/credentials/agate")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", authorization)
	f, g := startBedrockSigned(t, issued, "")
	checkBedrockSigned(t, f, g)
	if n := cc.calls.Load(); n != 1 {
		t.Errorf("the container endpoint was asked %d times, want 1", n)
	}
}

// sharedProfile writes the shared config and credentials files of a profile agate that
// assumes role with the keys of profile base, and points the SDK at them.
func sharedProfile(t *testing.T, role string, base aws.Credentials) {
	t.Setenv("AWS_CONFIG_FILE", writeSecret(t, "config", "[profile agate]\nrole_arn = "+role+
		"\nsource_profile = base\nrole_session_name = agate\nregion = us-east-1\n"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeSecret(t, "credentials", "[base]\naws_access_key_id = "+base.AccessKeyID+
		"\naws_secret_access_key = "+base.SecretAccessKey+"\n"))
}

// TestBedrock_SharedProfile: bedrock.profile names a shared-config profile that assumes a
// role (role_arn, source_profile): the SDK signs STS AssumeRole with the source profile's
// keys from the credentials file (the fake STS verifies it), and Bedrock requests are
// signed with the assumed role's credentials.
func TestBedrock_SharedProfile(t *testing.T) {
	clearCloudEnv(t)
	const role = "arn:aws:iam::123456789012:role/agate-bedrock"
	base := aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "base-profile-secret-key-EXAMPLE"}
	sts := awsSTS(t, role, "", base)
	sharedProfile(t, role, base)
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.srv.URL)
	f, g := startBedrockSigned(t, issued, ", profile: agate")
	checkBedrockSigned(t, f, g)
	if n := sts.calls.Load(); n != 1 {
		t.Errorf("STS asked %d times, want 1", n)
	}
	if r := sts.refusals(); len(r) > 0 {
		t.Errorf("STS refused: %v", r)
	}
}

// TestCloudCredentials_SourceFails: each credential source above, refused by its
// service, makes a request the 502 upstream_auth_failed that names the backend and the
// source, and neither the answer nor the gateway's logs hold the source's secret (the
// token file's content, the identity header, the profile's key) or the service's answer;
// the model was never called.
func TestCloudCredentials_SourceFails(t *testing.T) {
	cases := []struct {
		name string
		// setup makes the refusing service and the environment, and returns the backend's
		// YAML (base_url is added), the gateway's credential client, and the secrets.
		setup  func(t *testing.T) (backend string, client *http.Client, secrets []string)
		source string // what the error names
	}{
		{"azure workload identity", func(t *testing.T) (string, *http.Client, []string) {
			const projected = "projected-service-account-token-value"
			authority := newEntraAuthority(t, "tenant", "client", "")
			authority.assertion = "another-token"
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", writeSecret(t, "token", projected))
			t.Setenv("AZURE_CLIENT_ID", "client")
			t.Setenv("AZURE_TENANT_ID", "tenant")
			t.Setenv("AZURE_AUTHORITY_HOST", authority.srv.URL)
			return "type: azure\n    azure: {credential: workload_identity}", authority.srv.Client(), []string{projected, "AADSTS"}
		}, "entra workload identity (AZURE_FEDERATED_TOKEN_FILE)"},
		{"azure managed identity", func(t *testing.T) (string, *http.Client, []string) {
			id := freshIdentity(t) // no token of an earlier test is cached for it
			mi := appServiceIdentity(t, "the-right-header", id)
			t.Setenv("IDENTITY_ENDPOINT", mi.srv.URL+"/msi/token")
			t.Setenv("IDENTITY_HEADER", "a-wrong-identity-header")
			return "type: azure\n    azure: {credential: managed_identity, managed_identity_client_id: " + id + "}", nil, []string{"a-wrong-identity-header", "Managed Identity"}
		}, "azure managed identity"},
		{"google metadata server", func(t *testing.T) (string, *http.Client, []string) {
			md, _ := gceMetadata(t, "")
			t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.srv.URL, "http://"))
			return "type: vertex\n    vertex: {project: p, location: global}", nil, nil
		}, "application default credentials"},
		{"google workload identity federation", func(t *testing.T) (string, *http.Client, []string) {
			const subject = "federated-subject-token-value"
			sts := googleSTS(t, "//iam.googleapis.com/expected", "another")
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", externalAccountFile(t, "//iam.googleapis.com/expected", writeSecret(t, "t", subject), sts))
			return "type: vertex\n    vertex: {project: p, location: global}", nil, []string{subject, "invalid_grant"}
		}, "application default credentials"},
		{"aws web identity", func(t *testing.T) (string, *http.Client, []string) {
			const token = "web-identity-token-value"
			sts := awsSTS(t, "arn:aws:iam::123456789012:role/other", token, aws.Credentials{})
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeSecret(t, "t", token))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/agate-bedrock")
			t.Setenv("AWS_ENDPOINT_URL_STS", sts.srv.URL)
			return "type: bedrock\n    bedrock: {region: us-east-1}", nil, []string{token, "Not authorized"}
		}, "aws default credential chain: web identity"},
		{"aws container credentials", func(t *testing.T) (string, *http.Client, []string) {
			cc := containerCredentials(t, "the-right-token")
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", cc.srv.URL+"/v2/credentials/agate")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "a-wrong-container-token")
			return "type: bedrock\n    bedrock: {region: us-east-1}", nil, []string{"a-wrong-container-token", "Unable to authorize"}
		}, "aws default credential chain: container credentials"},
		{"aws shared profile", func(t *testing.T) (string, *http.Client, []string) {
			base := aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "profile-secret-not-the-one-sts-knows"}
			sts := awsSTS(t, "arn:aws:iam::123456789012:role/agate-bedrock", "", aws.Credentials{AccessKeyID: base.AccessKeyID, SecretAccessKey: "x"})
			sharedProfile(t, "arn:aws:iam::123456789012:role/agate-bedrock", base)
			t.Setenv("AWS_ENDPOINT_URL_STS", sts.srv.URL)
			return "type: bedrock\n    bedrock: {region: us-east-1, profile: agate}", nil, []string{base.SecretAccessKey, "Not authorized"}
		}, "aws profile agate: an assumed role"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkSourceFails(t, tc.setup, tc.source) })
	}
}

// checkSourceFails clears the clouds' environment, runs setup (which makes a refusing
// credential service and returns the backend's YAML without base_url, the gateway's
// credential client and the secrets that must not leak), and checks a chat request is
// the 502 upstream_auth_failed naming the backend and source, with no secret in the
// answer or the logs and no call to the model.
func checkSourceFails(t *testing.T, setup func(t *testing.T) (string, *http.Client, []string), source string) {
	t.Helper()
	clearCloudEnv(t)
	backend, credClient, secrets := setup(t)
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	t.Cleanup(up.Close)
	logs := &gatewaytest.Buffer{}
	g := gatewaytest.StartYAML(t, `
backends:
  cloudy:
    `+backend+`
    base_url: `+up.URL+`
    retries: {max: 0}
models:
  m: {backend: cloudy, upstream_model: some-model}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, CredentialClient: credClient, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_auth_failed" {
		t.Fatalf("error %v, want the 502 upstream_auth_failed", err)
	}
	if !strings.Contains(apiErr.Message, "cloudy") || !strings.Contains(apiErr.Message, source) {
		t.Errorf("message %q, want it to name the backend and %q", apiErr.Message, source)
	}
	for _, leak := range secrets {
		if strings.Contains(apiErr.RawJSON(), leak) || strings.Contains(logs.String(), leak) {
			t.Errorf("%q leaked: %s\nlogs %s", leak, apiErr.RawJSON(), logs.String())
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the model was called %d times without a credential", n)
	}
}
