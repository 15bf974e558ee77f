package bus_test

import (
	"fmt"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// A source publishes; each subscriber gets every event after it
// subscribed, in order, on its own goroutine. Flush waits until every
// subscriber has handled what was published before it.
func Example() {
	b := bus.New()
	cancel := b.Subscribe("printer", 16, func(ev events.Event) {
		fmt.Println(ev.Type, ev.At)
	})
	defer cancel()

	b.Publish(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{Model: "m", Capacity: 8}})
	b.Publish(events.Event{Type: "catalog.changed", At: 2})
	b.Flush()
	// Output:
	// scheduler.sample 1
	// catalog.changed 2
}
