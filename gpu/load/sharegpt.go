package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// A ShareGPT-format file is a JSON array of {"conversations": [{"from":
// "human"|"gpt", "value": text}, ...]} (as ShareGPT_V3_unfiltered_cleaned_split.json
// and vLLM's sharegpt dataset read it). Each conversation gives its first
// human turn as the prompt and the answer's length as max_tokens. Lengths
// are counted in words, times 4/3 (English text runs about that many
// tokens a word): the runner has no tokenizer, and the server's usage is
// what the results count.

// Bounds of a ShareGPT file: the public V3 file is 670 MB with 94,145
// conversations.
const (
	maxShareGPTBytes = 2 << 30
	maxConversations = 200_000
	maxTurnBytes     = 256 << 10
)

// vLLM's filter of the dataset: prompts and answers of 4 tokens or more,
// prompts of at most 1,024 and both together of at most 2,048.
const (
	minTurnTokens   = 4
	maxPromptTokens = 1024
	maxPairTokens   = 2048
)

type conversation struct {
	prompt       string
	promptTokens int
	outputTokens int
}

// readShareGPT reads the conversations of a ShareGPT-format file one at a
// time, keeps those vLLM's filter keeps, and shuffles them with seed.
// Its errors name the file's base name only.
func readShareGPT(path string, seed uint64) ([]conversation, error) {
	name := path[strings.LastIndexByte(path, '/')+1:]
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sharegpt file %s: %w", name, errors.Unwrap(err))
	}
	defer f.Close()
	convs, err := decodeShareGPT(io.LimitReader(f, maxShareGPTBytes))
	if err != nil {
		return nil, fmt.Errorf("sharegpt file %s: %w", name, err)
	}
	if len(convs) == 0 {
		return nil, fmt.Errorf("sharegpt file %s: no conversation has a human turn and an answer of %d to %d tokens", name, minTurnTokens, maxPromptTokens)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ba7e))
	rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	return convs, nil
}

func decodeShareGPT(r io.Reader) ([]conversation, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, errors.New("not a ShareGPT file: want a JSON array of conversations")
	}
	var out []conversation
	for dec.More() && len(out) < maxConversations {
		var entry struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&entry); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("unreadable at byte %d: %v", dec.InputOffset(), err)
			}
			continue // an entry of another shape is skipped
		}
		c := entry.Conversations
		if len(c) < 2 || len(c[0].Value) > maxTurnBytes || len(c[1].Value) > maxTurnBytes {
			continue
		}
		p, o := tokens(c[0].Value), tokens(c[1].Value)
		if p < minTurnTokens || o < minTurnTokens || p > maxPromptTokens || p+o > maxPairTokens {
			continue
		}
		out = append(out, conversation{prompt: c[0].Value, promptTokens: p, outputTokens: o})
	}
	return out, nil
}

// tokens is about how many tokens text is: its words times 4/3.
func tokens(text string) int { return (len(strings.Fields(text))*4 + 2) / 3 }
