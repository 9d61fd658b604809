package translate_test

import (
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// clientOutputs is what each client API makes of one upstream answer: a stream's bytes
// and the whole answer's assembler, for chat, Responses and Messages.
type clientOutputs struct {
	chatOut, respOut, msgsOut []byte
	chatWhole                 openaichat.Assembler
	respWhole                 *responsesin.Encoder
	msgsWhole                 messagesin.Assembler
}

// encodeEveryClient feeds the events decode emits to every client API's stream encoder
// and whole-answer assembler (a Responses request of model "m" saying "hi") and finishes
// them all.
func encodeEveryClient(t *testing.T, decode func(emit translate.Emit)) *clientOutputs {
	t.Helper()
	req, err := responsesin.Parse([]byte(`{"model":"m","input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	o := &clientOutputs{respWhole: responsesin.NewEncoder(req, responsesin.EncoderOptions{ID: "resp_1", Model: "m", Created: 1})}
	chat := openaichat.NewChunkEncoder("chatcmpl-1", "m", 1, true)
	resp := responsesin.NewEncoder(req, responsesin.EncoderOptions{ID: "resp_1", Model: "m", Created: 1, Stream: true})
	msgs := messagesin.NewEncoder("msg_1", "m")
	decode(func(ev *translate.Event) error {
		o.chatOut = chat.Encode(o.chatOut, ev)
		o.chatWhole.Add(ev)
		o.respOut = resp.Encode(o.respOut, ev)
		o.respWhole.Encode(nil, ev)
		var err error
		o.msgsOut, err = msgs.Encode(o.msgsOut, ev)
		o.msgsWhole.Add(ev)
		return err
	})
	o.chatOut = chat.Finish(o.chatOut)
	o.chatWhole.Finish()
	o.respOut = resp.Finish(o.respOut, 2)
	o.respWhole.Finish(nil, 2)
	o.msgsOut = msgs.Finish(o.msgsOut)
	return o
}
