package cloudauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
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
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/upstream"
)

var static = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "token-example"}

// counting is a credentials provider that counts its calls; creds expire after ttl (0:
// never), err fails every call.
type counting struct {
	calls atomic.Int32
	ttl   time.Duration
	err   error
	delay time.Duration
}

func (c *counting) Retrieve(context.Context) (aws.Credentials, error) {
	c.calls.Add(1)
	time.Sleep(c.delay)
	if c.err != nil {
		return aws.Credentials{}, c.err
	}
	creds := static
	if c.ttl != 0 {
		creds.CanExpire, creds.Expires = true, time.Now().Add(c.ttl)
	}
	return creds, nil
}

// bedrockRequest is a request as upstream.Client builds one for Bedrock.
func bedrockRequest() *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI("https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke")
	req.URI().DisablePathNormalizing = true
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.SetBodyRaw([]byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	return req
}

// verify recomputes req's signature with the SDK's own signer, as AWS does: the same
// method, escaped path, signed headers and body hash, from the same credentials.
func verify(t *testing.T, req *fasthttp.Request, creds aws.Credentials) {
	t.Helper()
	auth := string(req.Header.Peek("Authorization"))
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Fatalf("Authorization %q is no SigV4 for bedrock in us-east-1", auth)
	}
	signed, _, _ := strings.Cut(rest, ",")
	u, err := url.ParseRequestURI(string(req.URI().FullURI()))
	if err != nil {
		t.Fatal(err)
	}
	hr := &http.Request{Method: "POST", URL: u, Host: u.Host, Header: http.Header{}, ContentLength: int64(len(req.Body()))}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "content-length" {
			hr.Header.Set(h, string(req.Header.Peek(h)))
		}
	}
	at, err := time.Parse("20060102T150405Z", string(req.Header.Peek("X-Amz-Date")))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(req.Body())
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, hr, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	if got := hr.Header.Get("Authorization"); got != auth {
		t.Fatalf("the SDK's signer computes\n%s\nthe request has\n%s", got, auth)
	}
	if !strings.Contains(signed, "traceparent") || !strings.Contains(signed, "content-type") || !strings.Contains(signed, "x-amz-security-token") {
		t.Errorf("signed headers %q leave out the request's own", signed)
	}
	if string(req.Header.Peek("X-Amz-Security-Token")) != creds.SessionToken {
		t.Errorf("X-Amz-Security-Token %q", req.Header.Peek("X-Amz-Security-Token"))
	}
}

// TestAWSSign: a SigV4 signature over the request as sent, the one the SDK's signer
// computes from the same credentials at the same time.
func TestAWSSign(t *testing.T) {
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	a, err := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", Credentials: &counting{}, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	req := bedrockRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := a.Sign(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := string(req.Header.Peek("X-Amz-Date")); got != "20261206T110000Z" {
		t.Errorf("X-Amz-Date %q, want the injected clock's", got)
	}
	verify(t, req, static)
}

// TestAWSDefaultChain: without configured credentials the SDK's default chain finds them
// in the environment; with none anywhere, signing is a 502 upstream_auth_failed naming
// the chain and never a credential.
func TestAWSDefaultChain(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	for _, k := range []string{"AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Run("environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", static.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", static.SecretAccessKey)
		t.Setenv("AWS_SESSION_TOKEN", static.SessionToken)
		a, err := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		req := bedrockRequest()
		defer fasthttp.ReleaseRequest(req)
		if err := a.Sign(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		verify(t, req, static)
	})
	t.Run("none", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		os.Unsetenv("AWS_ACCESS_KEY_ID")
		os.Unsetenv("AWS_SECRET_ACCESS_KEY")
		a, err := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		req := bedrockRequest()
		defer fasthttp.ReleaseRequest(req)
		err = a.Sign(context.Background(), req)
		ue := upstream.AsError(err)
		if ue == nil || ue.Status != 502 || ue.Code != "upstream_auth_failed" || !strings.Contains(ue.Message, "backend aws with its aws default credential chain") {
			t.Fatalf("Sign = %v, want the 502 upstream_auth_failed naming the chain", err)
		}
	})
}

// TestAWSCredentialFailure: a credential source that fails is AuthFailed naming it; its
// error (which may quote a credential) is not passed on.
func TestAWSCredentialFailure(t *testing.T) {
	a, err := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", Credentials: &counting{err: errors.New("secret AKIDLEAKED refused")}})
	if err != nil {
		t.Fatal(err)
	}
	req := bedrockRequest()
	defer fasthttp.ReleaseRequest(req)
	err = a.Sign(context.Background(), req)
	if ue := upstream.AsError(err); ue == nil || ue.Code != "upstream_auth_failed" || strings.Contains(ue.Message, "AKIDLEAKED") {
		t.Fatalf("Sign = %v", err)
	}
	if len(req.Header.Peek("Authorization")) != 0 {
		t.Error("a request without credentials was given an Authorization")
	}
}

// TestAWSCredentialsCached: the SDK's CredentialsCache fetches credentials once for many
// requests, once for concurrent ones (a shared refresh), and again once they expire.
func TestAWSCredentialsCached(t *testing.T) {
	sign := func(a *AWS) {
		req := bedrockRequest()
		defer fasthttp.ReleaseRequest(req)
		if err := a.Sign(context.Background(), req); err != nil {
			t.Error(err)
		}
	}
	lasting := &counting{ttl: time.Hour, delay: 20 * time.Millisecond}
	a, _ := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", Credentials: lasting})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); sign(a) }()
	}
	wg.Wait()
	sign(a)
	if n := lasting.calls.Load(); n != 1 {
		t.Errorf("9 signatures, 8 of them concurrent, fetched credentials %d times, want 1", n)
	}
	expired := &counting{ttl: -time.Minute}
	b, _ := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", Credentials: expired})
	sign(b)
	sign(b)
	if n := expired.calls.Load(); n != 2 {
		t.Errorf("credentials that expired were fetched %d times for 2 signatures, want 2", n)
	}
}

// TestAWSBearer: a Bedrock API key goes as Authorization: Bearer, and nothing is signed.
func TestAWSBearer(t *testing.T) {
	a, err := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", APIKey: "bedrock-api-key-example"})
	if err != nil {
		t.Fatal(err)
	}
	req := bedrockRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := a.Sign(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := string(req.Header.Peek("Authorization")); got != "Bearer bedrock-api-key-example" || len(req.Header.Peek("X-Amz-Date")) != 0 {
		t.Errorf("Authorization %q, X-Amz-Date %q", got, req.Header.Peek("X-Amz-Date"))
	}
	if a.Source() != "api_key" {
		t.Errorf("source %q", a.Source())
	}
}

// BenchmarkAWSSign is the cost SigV4 adds to each Bedrock request (credentials cached).
func BenchmarkAWSSign(b *testing.B) {
	a, _ := NewAWS(context.Background(), AWSOptions{Backend: "aws", Region: "us-east-1", Credentials: &counting{}})
	req := bedrockRequest()
	defer fasthttp.ReleaseRequest(req)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Sign(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
