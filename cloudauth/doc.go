// Package cloudauth holds the credentials of the cloud backends, each an upstream.Signer
// that sets one request's credentials just before it is sent: Microsoft Entra ID bearer
// tokens for Azure OpenAI (azure.go, through the Azure SDK's azidentity), Google OAuth2
// access tokens for Vertex AI (google.go, through golang.org/x/oauth2/google's Application
// Default Credentials), and AWS SigV4 signatures for Bedrock (aws.go).
//
// The bearer tokens share one cache (Tokens): a token is reused until it is within
// RefreshMargin of its expiry, then refreshed once for every request that needs it (single
// flight: concurrent requests wait for the one refresh, each for as long as its own context
// allows). A refresh that fails is not cached: the next request tries again.
//
// Credentials are secrets: no token, key or secret is ever put into an error, a log line or
// a span. A failure is upstream.AuthFailed, the 502 upstream_auth_failed that names the
// backend and where its credentials come from (the source), never their value; the
// library's own error, which may quote a token endpoint's answer, is dropped.
//
// proxy builds the signer of a backend from its config (the edge); this package reads no
// config and keeps no package-level state.
package cloudauth
