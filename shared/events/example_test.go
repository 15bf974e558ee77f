package events_test

import (
	"encoding/json"
	"fmt"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Parse reads the host's flat form and the older envelope form alike, and
// an event encodes back to the flat form.
func ExampleParse() {
	flat, _ := events.Parse([]byte(`{"type":"scheduler.sample","at":1796280000000,"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}`))
	envelope, _ := events.Parse([]byte(`{"type":"scheduler.sample","at":1796280000000,"data":{"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}}`))
	a, _ := json.Marshal(flat)
	b, _ := json.Marshal(envelope)
	fmt.Println(string(a))
	fmt.Println(string(a) == string(b))

	_, err := events.Parse([]byte(`{"type":"scheduler.sample","at":1796280000000,"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":1e308}`))
	fmt.Println(err)
	// Output:
	// {"type":"scheduler.sample","at":1796280000000,"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}
	// true
	// tokensPerSecond: must be a number from 0 to 1e+09, got 1e+308
}
