package load

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The same seed gives the same lengths; the nonce makes every prompt new;
// a shared-prefix workload opens the asked share with one of its prefixes.
func TestWorkload(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    bench.Workload
		// check looks at the items drawn.
		check func(t *testing.T, items []item)
	}{
		{"fixed", bench.Workload{Kind: bench.WorkloadRandom, Input: bench.Lengths{Dist: bench.DistFixed, Tokens: 32}, Output: bench.Lengths{Dist: bench.DistFixed, Tokens: 8}},
			func(t *testing.T, items []item) {
				for _, it := range items {
					if it.maxTokens != 8 || it.promptTokens != 32 || len(strings.Fields(it.prompt)) != 32 {
						t.Fatalf("item %+v", it)
					}
				}
			}},
		{"uniform", bench.Workload{Kind: bench.WorkloadRandom, Input: bench.Lengths{Dist: bench.DistUniform, Min: 10, Max: 20}, Output: bench.Lengths{Dist: bench.DistUniform, Min: 1, Max: 3}},
			func(t *testing.T, items []item) {
				seen := map[int]bool{}
				for _, it := range items {
					if it.promptTokens < 10 || it.promptTokens > 20 || it.maxTokens < 1 || it.maxTokens > 3 {
						t.Fatalf("item out of range: %d, %d", it.promptTokens, it.maxTokens)
					}
					seen[it.maxTokens] = true
				}
				if len(seen) != 3 {
					t.Errorf("outputs drawn %v, want 1, 2 and 3", seen)
				}
			}},
		{"normal", bench.Workload{Kind: bench.WorkloadRandom, Input: bench.Lengths{Dist: bench.DistNormal, Mean: 100, Std: 10}, Output: bench.Lengths{Dist: bench.DistNormal, Mean: 2, Std: 5}},
			func(t *testing.T, items []item) {
				sum := 0
				for _, it := range items {
					sum += it.promptTokens
					if it.maxTokens < 1 {
						t.Fatalf("max_tokens %d under 1", it.maxTokens)
					}
				}
				if mean := float64(sum) / float64(len(items)); mean < 97 || mean > 103 {
					t.Errorf("mean input %v, want about 100", mean)
				}
			}},
		{"shared prefix", bench.Workload{Kind: bench.WorkloadSharedPrefix, Input: bench.Lengths{Tokens: 4}, Output: bench.Lengths{Tokens: 4}, Prefixes: 2, PrefixTokens: 50, PrefixRatio: 0.5},
			func(t *testing.T, items []item) {
				opened := 0
				for _, it := range items {
					if strings.HasPrefix(it.prompt, "prefix-") {
						opened++
						if it.promptTokens != 54 {
							t.Fatalf("prefixed item counts %d tokens, want 54", it.promptTokens)
						}
					}
				}
				if share := float64(opened) / float64(len(items)); share < 0.45 || share > 0.55 {
					t.Errorf("%.2f of the requests open with a prefix, want about 0.5", share)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			draw := func(seed uint64, nonce string) []item {
				wl, err := newWorkload(tc.w, seed)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(seed, 1))
				var out []item
				for i := range 2000 {
					out = append(out, wl.next(rng, nonce+"-"+string(rune('a'+i%26)), i))
				}
				return out
			}
			a, b, c := draw(1, "p1"), draw(1, "p2"), draw(2, "p1")
			tc.check(t, a)
			sameLengths, differs := true, false
			for i := range a {
				sameLengths = sameLengths && a[i].promptTokens == b[i].promptTokens && a[i].maxTokens == b[i].maxTokens
				differs = differs || a[i].promptTokens != c[i].promptTokens || a[i].maxTokens != c[i].maxTokens
				if a[i].prompt == b[i].prompt {
					t.Fatalf("request %d: two points sent the same prompt", i)
				}
			}
			if !sameLengths {
				t.Error("the same seed drew other lengths")
			}
			if tc.name != "fixed" && tc.name != "shared prefix" && !differs {
				t.Error("another seed drew the same lengths")
			}
		})
	}
}

func TestShareGPT(t *testing.T) {
	long := strings.Repeat("word ", 900)
	for _, tc := range []struct {
		name, file string
		want       int // conversations kept; -1 an error
	}{
		{"two kept", `[{"conversations":[{"from":"human","value":"tell me about the sea please"},{"from":"gpt","value":"the sea is large and deep and blue"}]},
			{"conversations":[{"from":"human","value":"what is a good name for a cat"},{"from":"gpt","value":"many people like the name tom or felix"}]}]`, 2},
		{"short turns left out", `[{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"hello there my friend how are you"}]}]`, -1},
		{"one turn left out", `[{"conversations":[{"from":"human","value":"tell me about the sea please"}]}]`, -1},
		{"too long left out", `[{"conversations":[{"from":"human","value":"` + long + `"},{"from":"gpt","value":"` + long + `"}]}]`, -1},
		{"another shape skipped", `[{"conversations":"nope"},{"conversations":[{"from":"human","value":"tell me about the sea please"},{"from":"gpt","value":"the sea is large and deep and blue"}]}]`, 1},
		{"not an array", `{"conversations":[]}`, -1},
		{"cut short", `[{"conversations":[{"from":"human","value":"tell me`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sg.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			convs, err := readShareGPT(path, 1)
			switch {
			case tc.want < 0 && err == nil:
				t.Fatalf("want an error, kept %d", len(convs))
			case tc.want < 0:
				if strings.Contains(err.Error(), filepath.Dir(path)) {
					t.Errorf("the error names the directory: %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case len(convs) != tc.want:
				t.Fatalf("kept %d, want %d", len(convs), tc.want)
			}
		})
	}
	if _, err := readShareGPT(filepath.Join(t.TempDir(), "missing.json"), 1); err == nil || strings.Contains(err.Error(), "/") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzDecodeShareGPT(f *testing.F) {
	f.Add([]byte(`[{"conversations":[{"from":"human","value":"tell me about the sea please"},{"from":"gpt","value":"the sea is large and deep"}]}]`))
	f.Add([]byte(`[{"conversations":[]},1,"x",null]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		convs, err := decodeShareGPT(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for _, c := range convs {
			if c.promptTokens < minTurnTokens || c.promptTokens > maxPromptTokens || c.outputTokens < minTurnTokens {
				t.Fatalf("kept %+v", c)
			}
		}
	})
}
