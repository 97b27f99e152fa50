// Command goref renders chat cases with Go's text/template as Ollama
// applies a Modelfile TEMPLATE: the main of the goref module that
// make-go-expected.py builds, whose packages template and api are
// Ollama's (kept outside this repository; see make-go-expected.py). Input (a file named by the first argument): a JSON list of
// {"name", "template", "messages", "tools"}. Output (stdout): a JSON
// object {"go": the Go version, "cases": {name: {"out": text} or
// {"err": message}}}; a message is the error Go's Parse or Execute gave.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"goref/template"
)

type tcase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

func render(c tcase) (string, error) {
	var v template.Values
	if err := json.Unmarshal(c.Messages, &v.Messages); err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	if len(c.Tools) > 0 {
		if err := json.Unmarshal(c.Tools, &v.Tools); err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
	}
	t, err := template.Parse(c.Template)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var cases []tcase
	if err := json.Unmarshal(data, &cases); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	res := map[string]map[string]string{}
	for _, c := range cases {
		out, err := render(c)
		if err != nil {
			res[c.Name] = map[string]string{"err": err.Error()}
		} else {
			res[c.Name] = map[string]string{"out": out}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	enc.Encode(map[string]any{"go": runtime.Version(), "cases": res})
}
