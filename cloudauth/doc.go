// Package cloudauth holds the cloud backends' credentials as upstream.Signers, each
// signing a request once its URI, headers and body are final:
//
//   - AWS SigV4 for Bedrock with the AWS SDK's v4 signer and default credential chain
//     (environment, shared config and credentials files and their profile, web identity,
//     ECS container and EC2 instance roles), cached and refreshed by the SDK's
//     CredentialsCache, or a Bedrock API key as a bearer token (aws.go);
//   - Microsoft Entra ID bearer tokens for Azure OpenAI through the Azure SDK's azidentity
//     (azure.go);
//   - Google OAuth2 access tokens for Vertex AI through golang.org/x/oauth2/google's
//     Application Default Credentials (google.go).
//
// The bearer tokens share one cache (Tokens, token.go): a token is reused until it is
// within RefreshMargin of its expiry, then refreshed once for every request that needs it
// (single flight: concurrent requests wait for the one refresh, each for as long as its own
// context allows). A refresh that fails is not cached: the next request tries again.
//
// Credentials are secrets: no token, key or secret is ever put into an error, a log line or
// a span. A credential that cannot be had is upstream.AuthFailed, the 502
// upstream_auth_failed that names the backend and where its credentials come from (the
// source), never their value; the library's own error, which may quote a token endpoint's
// answer, is dropped.
//
// proxy builds the signer of a backend from its config (the edge, proxy/cloud.go); this
// package reads no config and keeps no package-level state.
package cloudauth
