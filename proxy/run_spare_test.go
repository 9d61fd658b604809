package proxy

import (
	"testing"

	"github.com/agate-gateway/agate/translate/responsesin"
)

// TestRequestRun_SpareParseMemory: a run that will be recycled keeps the chat parse's
// Scratch and Stage for its next request, through Reset, and hands them out once; a
// stream's Stage, whose run goes to the GC, is not kept, nor the Stage of a body over
// maxSpareStageBody (it staged as many messages as the body held).
func TestRequestRun_SpareParseMemory(t *testing.T) {
	s := &Server{}
	c := &requestRun{s: s}
	sc, st := c.chatParseMemory()
	if sc == nil || st == nil {
		t.Fatal("no parse memory")
	}
	c.keepStage(st, false, maxSpareStageBody)
	c.scratch = sc
	c.keepScratch()
	if c.scratch != nil || c.spare.scratch != sc || c.spare.stage != st {
		t.Fatalf("kept scratch %p stage %p (run's scratch %p), want %p %p", c.spare.scratch, c.spare.stage, c.scratch, sc, st)
	}
	c.Reset()
	c.s = s // as serve sets it
	sc2, st2 := c.chatParseMemory()
	if sc2 != sc || st2 != st {
		t.Fatal("Reset dropped the run's parse memory")
	}
	if c.spare.scratch != nil || c.spare.stage != nil {
		t.Fatal("the spares were handed out and kept")
	}
	c.keepStage(st2, true, 100) // a stream's
	if c.spare.stage != nil {
		t.Fatal("a stream's run kept its Stage")
	}
	c.keepStage(s.stages.get(), false, maxSpareStageBody+1)
	if c.spare.stage != nil {
		t.Fatal("a run kept the Stage of a body over maxSpareStageBody")
	}
	c.keepChatScratch(sc2)
	other, _ := (&requestRun{s: s}).chatParseMemory()
	c.keepChatScratch(other) // a second one goes to the pool
	if c.spare.scratch != sc2 {
		t.Fatal("a second Scratch replaced the run's spare")
	}
}

// TestRequestRun_EndRoom: a recycled run hands out the Messages and Responses endpoint
// runs it made before, zero: Reset keeps each and empties it, so a kept one holds nothing
// of the request it served (its body, header, parsed request).
func TestRequestRun_EndRoom(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var c requestRun
	m, x := c.messagesRoom(), c.responsesRoom()
	m.c, m.body, m.model = &c, []byte(`{"model":"m"}`), "m"
	x.c, x.req, x.backend = &c, &responsesin.Request{}, "b"
	c.Reset()
	if c.messagesRoom() != m || c.responsesRoom() != x {
		t.Error("Reset dropped the endpoint runs: the next request allocates them again")
	}
	if m.c != nil || m.body != nil || m.model != "" || x.c != nil || x.req != nil || x.backend != "" {
		t.Errorf("Reset left the last request in the kept endpoint runs: %+v, %+v", m, x)
	}
}
