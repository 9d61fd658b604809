package proxy_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The credential sources of a host rather than of a pod (EC2 instance roles, IAM
// Identity Center, a profile's credential_process, the Azure VM's managed identity), run
// end to end like those of cloud_credentials_e2e_test.go: through the cloud's own library,
// against loopback fakes answering in the service's real format (sources at each fake).

// ec2Metadata is the EC2 instance metadata service on loopback
// (AWS_EC2_METADATA_SERVICE_ENDPOINT, which the SDK's imds client reads:
// feature/ec2/imds api_client.go, endpointEnvVar), requiring IMDSv2 as an instance with
// HttpTokens=required does: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
// (1 to 21600) grants a session token, echoing the TTL header back; every metadata GET
// without that token in X-aws-ec2-metadata-token is a 401. It serves the instance
// profile's role name at /latest/meta-data/iam/security-credentials/ and its temporary
// credentials at .../<role> in the JSON of the EC2 user guide's "Retrieve security
// credentials from instance metadata" (Code, LastUpdated, Type, AccessKeyId,
// SecretAccessKey, Token, Expiration), the shape ec2rolecreds' own tests answer
// (provider_test.go, credsRespTmpl). role "" is an instance without a role: the listing
// is a 404, as IMDS answers it.
type ec2Metadata struct {
	*tokenService
	creds atomic.Int32 // the credentials fetched
}

func newEC2Metadata(t *testing.T, role string) *ec2Metadata {
	const session = "AQAEAHl4Zm5rZW4tZXhhbXBsZS1pbWRzdjItc2Vzc2lvbi10b2tlbg=="
	md := &ec2Metadata{}
	md.tokenService = newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		if r.URL.Path == "/latest/api/token" {
			ttl, err := strconv.Atoi(r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
			if r.Method != http.MethodPut || err != nil || ttl < 1 || ttl > 21600 {
				w.WriteHeader(http.StatusBadRequest)
				return "token request " + r.Method + " ttl " + r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds")
			}
			w.Header().Set("X-aws-ec2-metadata-token-ttl-seconds", strconv.Itoa(ttl))
			io.WriteString(w, session)
			return ""
		}
		if r.Header.Get("X-aws-ec2-metadata-token") != session {
			w.WriteHeader(http.StatusUnauthorized)
			return "metadata request without the session token: " + r.URL.Path
		}
		const prefix = "/latest/meta-data/iam/security-credentials/"
		switch {
		case r.Method != http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return r.Method
		case role != "" && r.URL.Path == prefix:
			io.WriteString(w, role)
		case role != "" && r.URL.Path == prefix+role:
			md.creds.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, `{
  "Code" : "Success",
  "LastUpdated" : %q,
  "Type" : "AWS-HMAC",
  "AccessKeyId" : %q,
  "SecretAccessKey" : %q,
  "Token" : %q,
  "Expiration" : %q
}`, time.Now().UTC().Format(time.RFC3339), issued.AccessKeyID, issued.SecretAccessKey, issued.SessionToken,
				time.Now().UTC().Add(6*time.Hour).Format(time.RFC3339))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0" encoding="iso-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN"
	"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
 <head>
  <title>404 - Not Found</title>
 </head>
 <body>
  <h1>404 - Not Found</h1>
 </body>
</html>`)
			if role != "" {
				return "unknown path " + r.URL.Path
			}
		}
		return ""
	})
	return md
}

// useEC2Metadata turns the instance metadata back on (clearCloudEnv turns it off) and
// points the SDK at md.
func useEC2Metadata(t *testing.T, md *ec2Metadata) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md.srv.URL)
}

// TestBedrock_EC2InstanceRole: nothing configured but the instance metadata endpoint: the
// SDK's default chain falls through to the EC2 instance role, gets an IMDSv2 session token,
// finds the role and its credentials, and signs with them (Bedrock checks the signature
// and the session token); the credentials are fetched once for four requests.
func TestBedrock_EC2InstanceRole(t *testing.T) {
	clearCloudEnv(t)
	md := newEC2Metadata(t, "agate-bedrock-instance")
	useEC2Metadata(t, md)
	f, g := startBedrockSigned(t, issued, "")
	checkBedrockSigned(t, f, g)
	if n := md.creds.Load(); n != 1 {
		t.Errorf("the role's credentials were fetched %d times, want 1", n)
	}
	if r := md.refusals(); len(r) > 0 {
		t.Errorf("the metadata service refused: %v", r)
	}
}

// ssoPortal is the IAM Identity Center portal on loopback (AWS_ENDPOINT_URL_SSO, which the
// SDK's sso client reads: service/sso endpoints.go, resolveBaseEndpoint): GetRoleCredentials
// is GET /federation/credentials?account_id=&role_name= with the cached access token in
// x-amz-sso_bearer_token (service/sso request_snapshot/GetRoleCredentials.request.snap),
// answered with {"roleCredentials":{accessKeyId, expiration (Unix milliseconds),
// secretAccessKey, sessionToken}} (response_snapshot/GetRoleCredentials.response.snap and
// the SSO portal API reference); a token it does not know is the 401
// UnauthorizedException (UnauthorizedException.error.snap).
func ssoPortal(t *testing.T, account, role, accessToken string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		why := ""
		switch {
		case r.Method != http.MethodGet || r.URL.Path != "/federation/credentials":
			why = r.Method + " " + r.URL.Path
		case r.Header.Get("x-amz-sso_bearer_token") != accessToken:
			w.Header().Set("x-amzn-ErrorType", "UnauthorizedException")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"__type":"UnauthorizedException","message":"Session token not found or invalid"}`)
			return "x-amz-sso_bearer_token"
		case q.Get("account_id") != account || q.Get("role_name") != role:
			why = "account_id " + q.Get("account_id") + " role_name " + q.Get("role_name")
		}
		if why != "" {
			w.Header().Set("x-amzn-ErrorType", "ResourceNotFoundException")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"No access"}`)
			return why
		}
		fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":%q,"expiration":%d,"secretAccessKey":%q,"sessionToken":%q}}`,
			issued.AccessKeyID, time.Now().Add(time.Hour).UnixMilli(), issued.SecretAccessKey, issued.SessionToken)
		return ""
	})
}

// ssoProfile writes the shared config of profile agate signing in through IAM Identity
// Center, and the access token `aws sso login` would have cached for it in
// ~/.aws/sso/cache/<sha1 of the cache key>.json (ssocreds.StandardCachedTokenFilepath; the
// fields of ssocreds/testdata/valid_token.json). With session, the profile names an
// sso-session section and the cache key is its name; without, it is a legacy profile
// (sso_start_url in the profile) keyed by its start URL.
func ssoProfile(t *testing.T, session bool, accessToken string) {
	const startURL = "https://d-9067642ac7.awsapps.com/start"
	profile := "[profile agate]\nsso_account_id = 123456789012\nsso_role_name = BedrockInvoke\nregion = us-east-1\n"
	key := startURL
	if session {
		profile += "sso_session = corp\n\n[sso-session corp]\nsso_start_url = " + startURL +
			"\nsso_region = us-east-1\nsso_registration_scopes = sso:account:access\n"
		key = "corp"
	} else {
		profile += "sso_start_url = " + startURL + "\nsso_region = us-east-1\n"
	}
	t.Setenv("AWS_CONFIG_FILE", writeSecret(t, "config", profile))
	sum := sha1.Sum([]byte(key))
	cache := filepath.Join(os.Getenv("HOME"), ".aws", "sso", "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().UTC().Add(8 * time.Hour).Format(time.RFC3339)
	token := fmt.Sprintf(`{"startUrl":%q,"region":"us-east-1","accessToken":%q,"expiresAt":%q,"clientId":"sso-oidc-client-id","clientSecret":"sso-oidc-client-secret","registrationExpiresAt":%q,"refreshToken":"sso-refresh-token"}`,
		startURL, accessToken, expires, expires)
	if err := os.WriteFile(filepath.Join(cache, hex.EncodeToString(sum[:])+".json"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBedrock_IdentityCenter: bedrock.profile names a profile of IAM Identity Center
// (sso_session, and the legacy sso_start_url form): the SDK reads the access token cached
// by `aws sso login`, trades it at the portal's GetRoleCredentials for the role's
// credentials, and signs with them; the portal is asked once for four requests.
func TestBedrock_IdentityCenter(t *testing.T) {
	for _, session := range []bool{true, false} {
		t.Run(map[bool]string{true: "sso_session", false: "legacy sso_start_url"}[session], func(t *testing.T) {
			clearCloudEnv(t)
			const accessToken = "aoaAAAAAGexampleSSOAccessToken0123456789"
			portal := ssoPortal(t, "123456789012", "BedrockInvoke", accessToken)
			ssoProfile(t, session, accessToken)
			t.Setenv("AWS_ENDPOINT_URL_SSO", portal.srv.URL)
			f, g := startBedrockSigned(t, issued, ", profile: agate")
			checkBedrockSigned(t, f, g)
			if n := portal.calls.Load(); n != 1 {
				t.Errorf("the portal was asked %d times, want 1", n)
			}
			if r := portal.refusals(); len(r) > 0 {
				t.Errorf("the portal refused: %v", r)
			}
		})
	}
}

// credentialProcess writes a credential_process script that counts its runs in a file
// next to it and prints out (stdout), then exits with code; it returns the script's path
// and a function reading the count.
func credentialProcess(t *testing.T, out string, code int) (string, func() int) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	script := filepath.Join(dir, "agate-credentials")
	body := fmt.Sprintf("#!/bin/sh\necho run >> %q\ncat <<'EOF'\n%s\nEOF\nexit %d\n", runs, out, code)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script, func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run\n")
	}
}

// processOutput is what a credential_process prints: the JSON of the AWS CLI's "Sourcing
// credentials with an external process" (Version 1, AccessKeyId, SecretAccessKey,
// SessionToken, Expiration in ISO 8601), the fields processcreds decodes
// (processcreds/testdata/longsessiontoken.json).
func processOutput(c aws.Credentials) string {
	return fmt.Sprintf(`{
  "Version": 1,
  "AccessKeyId": %q,
  "SecretAccessKey": %q,
  "SessionToken": %q,
  "Expiration": %q
}`, c.AccessKeyID, c.SecretAccessKey, c.SessionToken, time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
}

// TestBedrock_CredentialProcess: bedrock.profile names a profile whose credential_process
// is a program printing temporary credentials: the SDK runs it (through sh -c, as the
// AWS CLI does) and signs with what it printed; it runs once for four requests.
func TestBedrock_CredentialProcess(t *testing.T) {
	clearCloudEnv(t)
	script, runs := credentialProcess(t, processOutput(issued), 0)
	t.Setenv("AWS_CONFIG_FILE", writeSecret(t, "config", "[profile agate]\ncredential_process = "+script+" --role bedrock\nregion = us-east-1\n"))
	f, g := startBedrockSigned(t, issued, ", profile: agate")
	checkBedrockSigned(t, f, g)
	if n := runs(); n != 1 {
		t.Errorf("the credential process ran %d times, want 1", n)
	}
}

// azureIMDSAddr is the Azure Instance Metadata Service's address. azidentity does not let
// it be redirected: MSAL's managed identity client builds the IMDS token request from the
// constant imdsDefaultEndpoint ("http://169.254.169.254/metadata/identity/oauth2/token",
// microsoft-authentication-library-for-go v1.10.1 apps/managedidentity/managedidentity.go
// lines 72 and 788, createIMDSAuthRequest), and reads no environment variable for it
// (AZURE_POD_IDENTITY_AUTHORITY_HOST is declared at line 98 but used nowhere). The test
// reaches it the only way left: the gateway's credential client dials the loopback fake
// when asked for this address.
const azureIMDSAddr = "169.254.169.254:80"

// dialing returns an HTTP client that connects to fake whenever asked for addr, and refuses
// every other address (no token request may leave the machine).
func dialing(addr, fake string) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, to string) (net.Conn, error) {
		if to != addr {
			return nil, fmt.Errorf("dial %s: only %s is reachable in this test", to, addr)
		}
		return d.DialContext(ctx, network, fake)
	}}}
}

// azureVMIdentity is the Azure VM's IMDS identity endpoint (reached through dialing): GET
// /metadata/identity/oauth2/token?api-version=2018-02-01&resource=...[&client_id=...]
// with the Metadata: true header, answered with the token JSON of Microsoft Learn's "How
// to use managed identities for Azure resources on an Azure VM to acquire an access
// token" (access_token, client_id, expires_in, expires_on, ext_expires_in, not_before,
// resource, token_type; the seconds as strings); an identity it does not have is the 400
// {"error":"invalid_request","error_description":"Identity not found"} of that page's
// error table.
func azureVMIdentity(t *testing.T, clientID, resource, token string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, _ []byte) string {
		q := r.URL.Query()
		why := ""
		switch {
		case r.Host != "169.254.169.254":
			why = "Host " + r.Host
		case r.Method != http.MethodGet || r.URL.Path != "/metadata/identity/oauth2/token":
			why = r.Method + " " + r.URL.Path
		case r.Header.Get("Metadata") != "true":
			why = "no Metadata: true"
		case q.Get("api-version") != "2018-02-01":
			why = "api-version " + q.Get("api-version")
		case q.Get("resource") != resource:
			why = "resource " + q.Get("resource")
		case q.Get("client_id") != clientID:
			why = "client_id " + q.Get("client_id")
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if why != "" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_request","error_description":"Identity not found"}`)
			return why
		}
		now := time.Now().Unix()
		fmt.Fprintf(w, `{"access_token":%q,"client_id":"9b1f1d7e-3c2a-4f44-9a57-1c6a2f0e8d31","expires_in":"86399","expires_on":"%d","ext_expires_in":"86399","not_before":"%d","resource":%q,"token_type":"Bearer"}`,
			token, now+86399, now, resource)
		return ""
	})
}

// TestAzure_VMManagedIdentity: credential managed_identity on a VM (no App Service, Arc or
// Cloud Shell environment), system-assigned and user-assigned: azidentity asks IMDS for
// the resource's token, and that token authenticates the requests, asked once.
// MSAL keeps managed identity tokens in a cache of the process (freshIdentity): the
// user-assigned identity is a fresh one, asked for the default resource; the
// system-assigned identity (one per machine) is asked for a fresh resource (azure.scope).
func TestAzure_VMManagedIdentity(t *testing.T) {
	for _, clientID := range []string{"", freshIdentity(t)} {
		t.Run(map[bool]string{true: "system-assigned", false: "user-assigned"}[clientID == ""], func(t *testing.T) {
			clearCloudEnv(t)
			resource, extra := "https://cognitiveservices.azure.com", ", managed_identity_client_id: "+clientID
			if clientID == "" {
				resource = freshResource(t)
				extra = ", scope: " + resource + "/.default"
			}
			imds := azureVMIdentity(t, clientID, resource, "vm-mi-token-1")
			up := azureAnswers(t, "vm-mi-token-1")
			g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure: {api_version: 2024-10-21, credential: managed_identity`+extra+`}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, CredentialClient: dialing(azureIMDSAddr, imds.srv.Listener.Addr().String())})
			checkTwoChats(t, g, "mini", "4242", imds.calls.Load)
			if r := imds.refusals(); len(r) > 0 {
				t.Errorf("IMDS refused: %v", r)
			}
		})
	}
}

// cloudShellIdentity is Azure Cloud Shell's managed identity endpoint on loopback (the
// MSI_ENDPOINT Cloud Shell sets, http://localhost:50342/oauth2/token there; without
// MSI_SECRET, MSAL's managedidentity source "CloudShell", cloud_shell.go): a form POST of
// the resource with Metadata: true, answered with the token JSON MSAL's own tests answer
// it with (managedidentity_test.go, getSuccessfulResponse: access_token, expires_on in Unix
// seconds, resource, token_type). Cloud Shell has a system-assigned identity only.
func cloudShellIdentity(t *testing.T, resource, token string) *tokenService {
	return newTokenService(t, func(w http.ResponseWriter, r *http.Request, body []byte) string {
		form, _ := url.ParseQuery(string(body))
		why := ""
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/oauth2/token":
			why = r.Method + " " + r.URL.Path
		case r.Header.Get("Metadata") != "true" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded":
			why = "headers"
		case form.Get("resource") != resource:
			why = "resource " + form.Get("resource")
		}
		w.Header().Set("Content-Type", "application/json")
		if why != "" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_request","error_description":"bad request"}`)
			return why
		}
		fmt.Fprintf(w, `{"access_token":%q,"expires_on":%d,"resource":%q,"token_type":"Bearer"}`, token, time.Now().Add(time.Hour).Unix(), resource)
		return ""
	})
}

// TestAzure_CloudShellManagedIdentity: credential managed_identity in Azure Cloud Shell
// (MSI_ENDPOINT): azidentity posts the resource to the endpoint and the token authenticates
// the requests, asked once. The scope (azure.scope) is a fresh resource's, so that MSAL's
// process-wide cache of system-assigned tokens (freshIdentity) does not answer instead.
func TestAzure_CloudShellManagedIdentity(t *testing.T) {
	clearCloudEnv(t)
	resource := freshResource(t)
	shell := cloudShellIdentity(t, resource, "cloud-shell-token-1")
	t.Setenv("MSI_ENDPOINT", shell.srv.URL+"/oauth2/token")
	up := azureAnswers(t, "cloud-shell-token-1")
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    azure: {api_version: 2024-10-21, credential: managed_identity, scope: "`+resource+`/.default"}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	checkTwoChats(t, g, "mini", "4242", shell.calls.Load)
	if r := shell.refusals(); len(r) > 0 {
		t.Errorf("Cloud Shell refused: %v", r)
	}
}

// TestCloudCredentials_HostSourcesFail: each source above, refused, is the 502
// upstream_auth_failed naming the backend and the source, leaking none of its secrets
// (checkSourceFails).
func TestCloudCredentials_HostSourcesFail(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T) (backend string, client *http.Client, secrets []string)
		source string
	}{
		{"aws ec2 instance without a role", func(t *testing.T) (string, *http.Client, []string) {
			useEC2Metadata(t, newEC2Metadata(t, ""))
			return "type: bedrock\n    bedrock: {region: us-east-1}", nil, []string{"AQAEAHl4Zm5rZW4", "404 - Not Found"}
		}, "aws default credential chain: the EC2 instance role"},
		{"aws identity center with a stale token", func(t *testing.T) (string, *http.Client, []string) {
			portal := ssoPortal(t, "123456789012", "BedrockInvoke", "the-token-the-portal-knows")
			ssoProfile(t, true, "a-revoked-sso-access-token")
			t.Setenv("AWS_ENDPOINT_URL_SSO", portal.srv.URL)
			return "type: bedrock\n    bedrock: {region: us-east-1, profile: agate}", nil,
				[]string{"a-revoked-sso-access-token", "sso-refresh-token", "sso-oidc-client-secret", "Session token not found"}
		}, "aws profile agate: IAM Identity Center"},
		{"aws credential process failing", func(t *testing.T) (string, *http.Client, []string) {
			script, _ := credentialProcess(t, "vault: permission denied for secret/aws/bedrock-credential-value", 1)
			t.Setenv("AWS_CONFIG_FILE", writeSecret(t, "config", "[profile agate]\ncredential_process = "+script+"\n"))
			return "type: bedrock\n    bedrock: {region: us-east-1, profile: agate}", nil, []string{"bedrock-credential-value", script}
		}, "aws profile agate: the profile's credential_process"},
		{"azure vm without the identity", func(t *testing.T) (string, *http.Client, []string) {
			imds := azureVMIdentity(t, "another-identity", "https://cognitiveservices.azure.com", "vm-token")
			return "type: azure\n    azure: {credential: managed_identity, managed_identity_client_id: 0d5c6a3e-unknown}",
				dialing(azureIMDSAddr, imds.srv.Listener.Addr().String()), []string{"Identity not found", "vm-token"}
		}, "azure managed identity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkSourceFails(t, tc.setup, tc.source) })
	}
}
