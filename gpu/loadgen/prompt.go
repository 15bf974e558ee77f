package loadgen

import (
	"strings"
)

// words are common English words that most tokenizers encode as one token
// each (with their leading space), so a prompt of n words is about n tokens.
// The exact count is whatever the server's usage says.
var words = strings.Fields(`time year people way day man thing woman life child
world school state family student group country problem hand part place case
week company system program question work government number night point home
water room mother area money story fact month lot right study book eye job word
business issue side kind head house service friend father power hour game line
end member law car city community name president team minute idea kid body
information back parent face others level office door health person art war
history party result change morning reason research girl guy moment air teacher
force education`)

// Prompt is text of about n tokens. A non-empty nonce opens it, so that no
// prefix cache can serve it; the same nonce gives the same prompt.
func Prompt(n int, nonce string) string {
	var b strings.Builder
	b.Grow(n * 8)
	if nonce != "" {
		b.WriteString(nonce)
		n--
	}
	for i := range max(n, 0) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(i*31+i/len(words))%len(words)])
	}
	return b.String()
}
