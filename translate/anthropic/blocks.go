package anthropic

import "github.com/agate-gateway/agate/translate"

// A turn's opening after the closing of the turn before it and a comma: block writes
// the part it needs in one append (from the comma after a turn already closed, from the
// brace for the first turn), not the five pieces it is made of.
const (
	userTurn      = `]},{"role":"user","content":[`
	assistantTurn = `]},{"role":"assistant","content":[`
)

// turnOpening returns the opening of a turn of role (userTurn, assistantTurn), or ""
// for another role, whose turn block writes piece by piece.
func turnOpening(role string) string {
	switch role {
	case translate.RoleUser:
		return userTurn
	case translate.RoleAssistant:
		return assistantTurn
	}
	return ""
}

// blockWith is block followed by head, a constant made of a comma and the block's
// opening (`,{"type":"text","text":`): a block that goes on with its role's turn is one
// append, the comma with the opening.
func (w *anthropicWriter) blockWith(role, head string) {
	if w.open && w.role == role {
		w.dst = append(w.dst, head...)
		return
	}
	w.block(role)
	w.dst = append(w.dst, head[1:]...)
}
