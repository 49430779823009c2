//! A Go plugin (CGO_ENABLED=0, goroutines, GC) runs under the runner. The Go toolchain is required,
//! like every tool the suite uses (`.ci/run` installs it): without it the test fails.

mod common;

use proto::runner::RunnerLimits;
use std::process::Command;

const MAIN_GO: &str = r#"package main

import (
	"bufio"
	"os"
	"runtime"
	"sync"
)

func main() {
	bufio.NewReader(os.Stdin).ReadString('\n')
	var wg sync.WaitGroup
	sums := make([]int, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 200000; j++ {
				b := make([]byte, 64)
				sums[i] += len(b)
			}
		}(i)
	}
	wg.Wait()
	runtime.GC()
	if err := os.WriteFile("out/go.txt", []byte("goroutines done\n"), 0o600); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"go.txt\"]}\n")
}
"#;

#[test]
fn go_plugin_with_goroutines_and_gc_runs() {
    testkit::require_program("go", "golang-go");
    let dir = sandbox::Scratch::new("go").expect("scratch");
    std::fs::write(dir.dir.join("main.go"), MAIN_GO).expect("main.go");
    std::fs::write(
        dir.dir.join("go.mod"),
        "module example.com/goplugin\n\ngo 1.19\n",
    )
    .expect("go.mod");
    let built = Command::new("go")
        .args(["build", "-o", "plugin", "."])
        .current_dir(&dir.dir)
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-buildvcs=false")
        .output()
        .expect("go build");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let plugin = std::fs::File::open(dir.dir.join("plugin")).expect("plugin");
    let limits = RunnerLimits {
        memory_bytes: 1 << 30,
        ..common::limits()
    };
    let (run, _scratch) = common::launch(&plugin, b"{}", limits);
    assert!(
        run.status.success(),
        "{:?} {}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let response = proto::protocol::Response::parse(&run.stdout, 4096).expect("response");
    assert_eq!(response.outputs, ["go.txt"]);
    assert_eq!(
        run.read_stage_file("out/go.txt").expect("out"),
        b"goroutines done\n"
    );
}
