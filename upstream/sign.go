package upstream

import (
	"context"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// Signer sets a request's credentials once its URI, headers and body are final, just
// before it is sent: a cloud's short-lived bearer token (Azure Entra ID, Google OAuth2)
// or a signature over the whole request (AWS SigV4). It is called once per attempt,
// concurrently for concurrent requests, and must be safe for that. It may block to
// refresh a credential (sharing one refresh among concurrent callers); ctx bounds the
// wait. An error is returned to Send's caller as it is when it is a
// *translate.UpstreamError (AuthFailed is the one to use), else wrapped by AuthFailed
// with source "credentials". A Signer never puts a credential into an error.
type Signer interface {
	Sign(ctx context.Context, req *fasthttp.Request) error
}

// AuthFailed is the 502 of a backend whose credentials could not be had or used (a token
// refresh that failed, a credential chain that found none): source names where they come
// from (e.g. "AZURE_CLIENT_SECRET", "application default credentials", "aws default
// credential chain"), never their value. It is not retried.
func AuthFailed(backend, source string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error", Code: "upstream_auth_failed",
		Message: "the gateway could not authenticate to the upstream of backend " + backend + " with its " + source}
}
