package cloudauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/upstream"
)

// AWSOptions configure an AWS signer (NewAWS).
type AWSOptions struct {
	// Backend names the backend in errors.
	Backend string
	// Region is the AWS region the requests are signed for (us-east-1). Required for
	// SigV4.
	Region string
	// Service is the SigV4 signing name; "" means bedrock.
	Service string
	// Profile is the shared config profile the default credential chain reads; "" means
	// AWS_PROFILE's, else default.
	Profile string
	// APIKey, when set, is a Bedrock API key sent as Authorization: Bearer instead of a
	// SigV4 signature; the credential chain is then not read.
	APIKey string
	// HTTPClient fetches the chain's credentials (STS, SSO, the container and instance
	// metadata endpoints); nil is the AWS SDK's default.
	HTTPClient *http.Client
	// Credentials, when set, replace the default credential chain (tests use static
	// ones); they are wrapped in the SDK's CredentialsCache.
	Credentials aws.CredentialsProvider
	// Now is the signing clock; nil means time.Now.
	Now func() time.Time
}

// AWS signs each request for an AWS service: SigV4 with the AWS SDK's v4 signer, the
// credentials from the SDK's default chain (environment, shared config and credentials
// files with their profile, web identity, ECS container and EC2 instance roles), cached
// and refreshed before expiry by the SDK's CredentialsCache, whose refresh concurrent
// requests share; or a Bedrock API key as a bearer token. It implements upstream.Signer
// and is safe for concurrent use.
type AWS struct {
	backend, region, service string
	bearer                   string
	creds                    aws.CredentialsProvider
	signer                   *v4.Signer
	now                      func() time.Time
	// source names where the credentials come from, for errors: never their value.
	source string
}

// NewAWS returns the signer of o. It reads the shared config files and the environment
// (no network: credentials are fetched at the first request); the error is a shared
// config that does not load, e.g. a profile that is not there.
func NewAWS(ctx context.Context, o AWSOptions) (*AWS, error) {
	a := &AWS{backend: o.Backend, region: o.Region, service: o.Service, bearer: o.APIKey, now: o.Now,
		signer: v4.NewSigner(), source: "aws default credential chain"}
	if a.service == "" {
		a.service = "bedrock"
	}
	if a.now == nil {
		a.now = time.Now
	}
	switch {
	case a.bearer != "":
		a.source = "api_key"
	case o.Credentials != nil:
		a.creds = aws.NewCredentialsCache(o.Credentials)
		a.source = "configured aws credentials"
	default:
		opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(o.Region)}
		if o.Profile != "" {
			opts = append(opts, awsconfig.WithSharedConfigProfile(o.Profile))
			a.source = "aws profile " + o.Profile
		}
		if o.HTTPClient != nil {
			opts = append(opts, awsconfig.WithHTTPClient(o.HTTPClient))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, err
		}
		a.creds = cfg.Credentials // a CredentialsCache over the default chain
		a.source = awsSource(a.source, cfg.Credentials)
	}
	return a, nil
}

// Source names where the signer's credentials come from (never their value).
func (a *AWS) Source() string { return a.source }

// Sign sets req's Authorization: the bearer API key, or a SigV4 signature (with
// X-Amz-Date and, for temporary credentials, X-Amz-Security-Token) over its method, URI,
// every header it carries, its host and content length, and its body's SHA-256. A
// credential that cannot be had is upstream.AuthFailed naming the source.
func (a *AWS) Sign(ctx context.Context, req *fasthttp.Request) error {
	if a.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+a.bearer)
		return nil
	}
	if a.creds == nil {
		return upstream.AuthFailed(a.backend, a.source)
	}
	creds, err := a.creds.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return upstream.AuthFailed(a.backend, a.source)
	}
	u, err := url.ParseRequestURI(string(req.URI().RequestURI()))
	if err != nil {
		return upstream.Fault(a.backend, "request URI does not parse for signing")
	}
	u.Scheme, u.Host = string(req.URI().Scheme()), string(req.URI().Host())
	body := req.Body()
	hr := &http.Request{Method: string(req.Header.Method()), URL: u, Host: u.Host, Header: make(http.Header, 8), ContentLength: int64(len(body))}
	for k, v := range req.Header.All() {
		switch string(k) {
		case "Host", "Content-Length", "User-Agent", "Authorization":
			continue
		}
		hr.Header.Add(string(k), string(v))
	}
	sum := sha256.Sum256(body)
	if err := a.signer.SignHTTP(ctx, creds, hr, hex.EncodeToString(sum[:]), a.service, a.region, a.now()); err != nil {
		return upstream.AuthFailed(a.backend, a.source)
	}
	req.Header.Set("Authorization", hr.Header.Get("Authorization"))
	req.Header.Set("X-Amz-Date", hr.Header.Get("X-Amz-Date"))
	if t := hr.Header.Get("X-Amz-Security-Token"); t != "" {
		req.Header.Set("X-Amz-Security-Token", t)
	}
	return nil
}

// awsSource is chain, the name of the credential chain, followed by the source the SDK
// resolved it to (LoadDefaultConfig picks one provider from the environment and the
// shared config), so that an error sends the operator to the right settings: where the
// credentials come from, never them.
func awsSource(chain string, p aws.CredentialsProvider) string {
	providers := []struct {
		provider aws.CredentialsProvider
		name     string
	}{
		{credentials.StaticCredentialsProvider{}, "static keys (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile's)"},
		{&stscreds.WebIdentityRoleProvider{}, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, or a profile's)"},
		{&stscreds.AssumeRoleProvider{}, "an assumed role (the profile's role_arn)"},
		{&endpointcreds.Provider{}, "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)"},
		{&ec2rolecreds.Provider{}, "the EC2 instance role (instance metadata)"},
		{&processcreds.Provider{}, "the profile's credential_process"},
		{&ssocreds.Provider{}, "IAM Identity Center (the profile's sso_session)"},
	}
	for _, k := range providers {
		if aws.IsCredentialsProvider(p, k.provider) {
			return chain + ": " + k.name
		}
	}
	return chain
}
