package proxy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUpstreamErrorMasked: credentials an upstream quotes back in its error message reach
// neither the client (stream or not) nor the log.
func TestUpstreamErrorMasked(t *testing.T) {
	const (
		key    = "sk-proj-Zx81Qw27Er64Ty39Ui05"
		google = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
		bearer = "tok3n.V4lue"
	)
	msg := "key " + key + " (or " + google + ") rejected; saw Authorization: Bearer " + bearer
	for _, status := range []int{400, 500} {
		for _, stream := range []bool{false, true} {
			name := "status " + strconv.Itoa(status)
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				up := newUpstream(t, replayJSON(status, []byte(`{"error":{"message":`+jsonString(t, msg)+`,"type":"invalid_request_error","code":"bad"}}`)))
				g := passthroughGateway(t, up)
				got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), stream)))
				want := "key sk-*** (or AIza***) rejected; saw Authorization: Bearer ***"
				if diff := cmp.Diff(want, got.Message); diff != "" {
					t.Errorf("client message (-want +got):\n%s", diff)
				}
				logs := g.logText()
				for _, secret := range []string{key, google, bearer} {
					if strings.Contains(logs, secret) {
						t.Errorf("the log holds %q:\n%s", secret, logs)
					}
				}
			})
		}
	}
}
