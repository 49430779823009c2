// A dot plugin in Go: reads the request on stdin, writes out/greeting.txt, prints the response.
// Build it static (process containment runs static executables only):
//
//	CGO_ENABLED=0 go build -o greet .
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

type request struct {
	Protocol string            `json:"protocol"`
	Plugin   string            `json:"plugin"`
	Inputs   map[string]string `json:"inputs"`
}

type response struct {
	Protocol string   `json:"protocol"`
	Status   string   `json:"status"`
	Outputs  []string `json:"outputs,omitempty"`
	Message  string   `json:"message,omitempty"`
}

func answer(r response) {
	r.Protocol = "1.0"
	json.NewEncoder(os.Stdout).Encode(r)
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		answer(response{Status: "error", Message: "bad request: " + err.Error()})
		os.Exit(1)
	}
	name := req.Inputs["name"]
	if name == "" {
		name = "world"
	}
	text := fmt.Sprintf("hello, %s, from Go\n", name)
	if err := os.WriteFile("out/greeting.txt", []byte(text), 0o644); err != nil {
		answer(response{Status: "error", Message: err.Error()})
		os.Exit(1)
	}
	answer(response{Status: "ok", Outputs: []string{"greeting.txt"}})
}
