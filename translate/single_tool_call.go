package translate

// FirstToolCallOnly returns an Emit that passes every event on to emit except the tool
// calls of a choice after its first one (their start, argument and end events). It serves
// parallel_tool_calls: false on upstreams that cannot be asked for one call at a time
// (Gemini returns parallel function calls in one turn): the client sees, and sends back in
// its history, only the first call of each turn; on upstreams that honour the setting it
// changes nothing. Gemini puts a turn's thought signature on its first function call, so
// the kept call carries it. The returned Emit serves one response and is not safe for
// concurrent use.
func FirstToolCallOnly(emit Emit) Emit {
	var first []int // per choice: 1 + the index of its first tool call, 0 before one
	return func(ev *Event) error {
		switch ev.Kind {
		case EventToolCallStart:
			for len(first) <= ev.Choice {
				first = append(first, 0)
			}
			if first[ev.Choice] == 0 {
				first[ev.Choice] = ev.Index + 1
			} else if first[ev.Choice] != ev.Index+1 {
				return nil
			}
		case EventToolCallArgsDelta, EventToolCallEnd:
			if ev.Choice >= len(first) || first[ev.Choice] != ev.Index+1 {
				return nil
			}
		}
		return emit(ev)
	}
}
