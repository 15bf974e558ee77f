package apiclient

// SetMaxAnswer lowers c's bound on an answer, so a test need not send
// MaxAnswerBytes.
func SetMaxAnswer(c *Client, n int64) { c.maxAnswer = n }
