//! A misbehaving plugin for the cross-tool suites. Input `mode` picks the behaviour; every mode that
//! "succeeds" writes `out/result.txt` and prints a valid response unless the mode is about breaking
//! exactly that.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::process::{Command, ExitCode};
use std::time::Duration;

const OK: &str = r#"{"protocol":"1.0","status":"ok","outputs":["result.txt"]}"#;

fn input<'a>(req: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    req.get("inputs")
        .and_then(|i| i.get(key))
        .and_then(|v| v.as_str())
}

fn respond_ok(body: &str) -> ExitCode {
    if std::fs::write("out/result.txt", body).is_err() {
        return ExitCode::from(9);
    }
    println!("{OK}");
    ExitCode::SUCCESS
}

/// Children re-executed from /proc/self/exe: `child-wait FIFO MARKER [setsid]` blocks on the FIFO the
/// test holds, then writes MARKER; `child-exit` exits at once. `exec …` stands in for dot-sandbox.
fn child(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        Some("child-wait") => {
            if args.get(3).is_some_and(|a| a == "setsid") {
                let _ = nix::unistd::setsid();
            }
            let (Some(fifo), Some(marker)) = (args.get(1), args.get(2)) else {
                return ExitCode::from(2);
            };
            let mut buf = [0u8; 1];
            if let Ok(mut f) = std::fs::File::open(fifo) {
                let _ = f.read(&mut buf);
            }
            let _ = std::fs::write(marker, b"escaped");
            ExitCode::SUCCESS
        }
        // Standing in for dot-sandbox (`exec --report-fd N …`): reports a refusal on descriptor N
        // and runs nothing.
        Some("exec") => {
            let fd = args
                .iter()
                .skip_while(|a| *a != "--report-fd")
                .nth(1)
                .cloned()
                .unwrap_or_default();
            let report = r#"{"error":{"error":"landlock-not-enforced","message":"a stand-in runner refused"}}"#;
            // The report descriptor is a socket: claimed as inherited, not reopened through /proc.
            match fd.parse().map(sys::confine::claim_inherited_fd) {
                Ok(Ok(fd)) => {
                    let _ = writeln!(std::fs::File::from(fd), "{report}");
                    ExitCode::from(1)
                }
                _ => ExitCode::from(2),
            }
        }
        _ => ExitCode::SUCCESS,
    }
}

fn spawn_waiters(fifo: &str, marker: &str, n: usize) {
    for i in 0..n {
        let mut c = Command::new("/proc/self/exe");
        c.args(["child-wait", fifo, marker]);
        if i % 2 == 1 {
            c.arg("setsid");
        }
        let _ = c.spawn();
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        return child(&args);
    }
    let mut raw = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut raw);
    let req: serde_json::Value = serde_json::from_slice(&raw).unwrap_or(serde_json::Value::Null);
    let mode = input(&req, "mode").unwrap_or("ok");
    // Input `say`: one line on stderr before the mode does anything.
    if let Some(say) = input(&req, "say") {
        eprintln!("{say}");
    }
    match mode {
        "ok" => respond_ok("ok\n"),
        // System calls a `process` plugin is refused: three sockets and a setsid, each outcome
        // (its errno) written to the result.
        "denied" => {
            let errno = |r: std::io::Result<()>| match r {
                Ok(()) => "ok".to_owned(),
                Err(e) => e.raw_os_error().unwrap_or(0).to_string(),
            };
            let mut body = String::new();
            for _ in 0..2 {
                let r = std::net::TcpListener::bind("127.0.0.1:0").map(drop);
                body.push_str(&format!("socket {}\n", errno(r)));
            }
            let r = std::os::unix::net::UnixDatagram::unbound().map(drop);
            body.push_str(&format!("socket {}\n", errno(r)));
            let r = nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from);
            body.push_str(&format!("setsid {}\n", errno(r)));
            respond_ok(&body)
        }
        "marker" => {
            if let Some(m) = input(&req, "marker") {
                let _ = std::fs::write(m, b"ran");
            }
            respond_ok("ran\n")
        }
        "env" => {
            let env: Vec<String> = std::env::vars_os()
                .map(|(k, v)| format!("{k:?}={v:?}"))
                .collect();
            respond_ok(&env.join("\n"))
        }
        "fds" => {
            let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            fds.sort();
            respond_ok(&fds.join(","))
        }
        "noise-before" => {
            println!("starting up");
            respond_ok("x")
        }
        "noise-after" => {
            let code = respond_ok("x");
            println!("done");
            code
        }
        "two-objects" => {
            let code = respond_ok("x");
            println!("{OK}");
            code
        }
        // Bytes a terminal would act on (clear the screen, set its title, ring), and one that is
        // not UTF-8, as the whole of stdout.
        "terminal-noise" => {
            let _ = std::io::stdout().write_all(b"\x1b[2J\x1b]0;title\x07\xff\n");
            ExitCode::SUCCESS
        }
        "not-json" => {
            let _ = std::fs::write("out/result.txt", "x");
            println!("hello world");
            ExitCode::SUCCESS
        }
        "big-stdout" => {
            let line = "x".repeat(1023);
            let mut out = std::io::stdout().lock();
            for _ in 0..2048 {
                if writeln!(out, "{line}").is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        "big-stderr" => {
            let line = "e".repeat(1023);
            let mut err = std::io::stderr().lock();
            for _ in 0..1024 {
                if writeln!(err, "{line}").is_err() {
                    break;
                }
            }
            respond_ok("x")
        }
        "some-stderr" => {
            eprintln!("a warning the launcher counts and discards");
            respond_ok("x")
        }
        // Explains its failure: numbered debug lines on stderr (`size` of them, default 3), then
        // `status: "error"` with a message, then exit status 4.
        "explain-fail" => {
            let n: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(3);
            for i in 0..n {
                eprintln!("debug line {i}");
            }
            println!(
                r#"{{"protocol":"1.0","status":"error","message":"the input was not a poem"}}"#
            );
            ExitCode::from(4)
        }
        // Text a terminal would act on, in its message and on stderr: an OSC 52 clipboard write,
        // a screen clear, a C1 CSI, a bidi override, a BEL; then exit status 4.
        "hostile-text" => {
            eprintln!("before\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[Hafter");
            eprintln!("\u{202e}gnp.exe\u{9b}31m");
            println!(
                r#"{{"protocol":"1.0","status":"error","message":"bad\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\u009b31m\u202etxt"}}"#
            );
            ExitCode::from(4)
        }
        "exit-3" => {
            let _ = std::fs::write("out/result.txt", "x");
            println!("{OK}");
            ExitCode::from(3)
        }
        "signal" => {
            let _ = std::fs::write("out/result.txt", "x");
            println!("{OK}");
            let _ = std::io::stdout().flush();
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            ExitCode::SUCCESS
        }
        // How many CPUs it may run on (its affinity), in out/result.txt.
        "cpus" => {
            let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0));
            let n = set.map_or(0, |s| {
                (0..nix::sched::CpuSet::count())
                    .filter(|&c| s.is_set(c).unwrap_or(false))
                    .count()
            });
            respond_ok(&n.to_string())
        }
        "abort" => {
            // SIGABRT, a signal whose default action dumps core.
            std::process::abort()
        }
        "sleep" => {
            std::thread::sleep(Duration::from_secs(3600));
            respond_ok("late")
        }
        // Allocates and touches `size` bytes (an input, decimal; default 2 GiB): under `process`
        // the runner's RLIMIT_AS (1 GiB) makes a big allocation fail, and the allocation-failure
        // handler aborts the plugin.
        "alloc" => {
            let size: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(2 << 30);
            let big = std::hint::black_box(vec![1u8; size]);
            respond_ok(&format!("{}\n", big.len()))
        }
        // Allocates and touches `size` bytes (default 3 GiB), with `threads` more threads asleep
        // (default none), then sleeps until it is killed: a killed process this big takes a while
        // (here hundreds of milliseconds) to become a zombie.
        "alloc-sleep" => {
            let size: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(3 << 30);
            let threads: usize = input(&req, "threads")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            for _ in 0..threads {
                std::thread::spawn(|| std::thread::sleep(Duration::from_secs(3600)));
            }
            let big = std::hint::black_box(vec![1u8; size]);
            std::thread::sleep(Duration::from_secs(3600));
            respond_ok(&format!("{}\n", big.len()))
        }
        // `a` threads (default 1, the main thread one of them) each spinning on the CPU for `size`
        // milliseconds of wall time (default: until killed), then answers with the thread count.
        "spin" => {
            let threads: usize = input(&req, "a").and_then(|s| s.parse().ok()).unwrap_or(1);
            let spin = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .map(Duration::from_millis)
                .unwrap_or(Duration::MAX);
            let start = std::time::Instant::now();
            let work = move || {
                let mut n = 0u64;
                while start.elapsed() < spin {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
                n
            };
            let others: Vec<_> = (1..threads).map(|_| std::thread::spawn(work)).collect();
            work();
            for t in others {
                let _ = t.join();
            }
            respond_ok(&format!("spun {threads}\n"))
        }
        // Writes out/small.txt, then `size` bytes (an input, decimal) of `x` to out/big.bin, and
        // declares both, small first (so a commit writes the small temp file before the big one).
        "big-output" => {
            let size: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if std::fs::write("out/small.txt", b"small\n").is_err()
                || std::fs::write("out/big.bin", vec![b'x'; size]).is_err()
            {
                return ExitCode::from(9);
            }
            println!(r#"{{"protocol":"1.0","status":"ok","outputs":["small.txt","big.bin"]}}"#);
            ExitCode::SUCCESS
        }
        // The response, then one newline too many.
        "two-newlines" => {
            print!("{OK}\n\n");
            ExitCode::SUCCESS
        }
        // `size` outputs (default 200), out/f0 … out/fN, each empty.
        "many-outputs" => {
            let n: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(200);
            let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
            if names
                .iter()
                .any(|f| std::fs::write(format!("out/{f}"), b"").is_err())
            {
                return ExitCode::from(9);
            }
            let list = serde_json::to_string(&names).unwrap_or_default();
            println!(r#"{{"protocol":"1.0","status":"ok","outputs":{list}}}"#);
            ExitCode::SUCCESS
        }
        "status-error" => {
            println!(r#"{{"protocol":"1.0","status":"error","message":"cannot do that"}}"#);
            ExitCode::SUCCESS
        }
        "bad-output-name" => {
            let _ = std::fs::write("out/result.txt", "x");
            println!(r#"{{"protocol":"1.0","status":"ok","outputs":["../escape.txt"]}}"#);
            ExitCode::SUCCESS
        }
        "missing-output" => {
            println!(r#"{{"protocol":"1.0","status":"ok","outputs":["nothere.txt"]}}"#);
            ExitCode::SUCCESS
        }
        "symlink-output" => {
            let _ = std::os::unix::fs::symlink("/etc/passwd", "out/result.txt");
            println!("{OK}");
            ExitCode::SUCCESS
        }
        // One output named by the input `name` (any bytes the request carries), content `a`.
        "named-output" => {
            let name = input(&req, "name").unwrap_or("result.txt");
            let _ = std::fs::write(format!("out/{name}"), input(&req, "a").unwrap_or("named\n"));
            let response = serde_json::json!({"protocol":"1.0","status":"ok","outputs":[name]});
            println!("{response}");
            ExitCode::SUCCESS
        }
        // Starts threads (each parks) until the kernel refuses one or `size` (default 100000)
        // are running; writes `threads N STOPPED` (STOPPED: the errno name, or `none`). With
        // `then` = `hold`, keeps them alive until killed before answering.
        "thread-bomb" => {
            let max: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(100_000);
            let mut started = 0usize;
            let mut stopped = "none".to_owned();
            while started < max {
                match std::thread::Builder::new()
                    .stack_size(64 * 1024)
                    .spawn(|| loop {
                        std::thread::park();
                    }) {
                    Ok(_) => started += 1,
                    Err(e) => {
                        stopped = match e.raw_os_error() {
                            Some(11) => "EAGAIN".to_owned(),
                            _ => e.to_string(),
                        };
                        break;
                    }
                }
            }
            if input(&req, "then") == Some("hold") {
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            respond_ok(&format!("threads {started} {stopped}\n"))
        }
        // Fills the stage: 16 MiB files until a write fails (they are then removed), then
        // directories nested one in the other until a mkdir fails; writes
        // `bytes B ERR depth D ERR` (ERR: the errno name, or the signal-free `none`).
        "fill-stage" => {
            let errno = |e: &std::io::Error| match e.raw_os_error() {
                Some(28) => "ENOSPC".to_owned(),
                Some(27) => "EFBIG".to_owned(),
                _ => e.to_string(),
            };
            let chunk = vec![0x5au8; 1 << 20];
            let (mut bytes, mut stopped) = (0u64, "none".to_owned());
            'files: for i in 0..100_000 {
                let Ok(mut f) = std::fs::File::create(format!("fill-{i}")) else {
                    break;
                };
                for _ in 0..16 {
                    match f.write(&chunk) {
                        Ok(n) if n == chunk.len() => bytes += n as u64,
                        Ok(n) => {
                            bytes += n as u64;
                            stopped = "short".into();
                            break 'files;
                        }
                        Err(e) => {
                            stopped = errno(&e);
                            break 'files;
                        }
                    }
                }
            }
            for i in 0..100_000 {
                if std::fs::remove_file(format!("fill-{i}")).is_err() {
                    break;
                }
            }
            let Ok(top) = std::fs::File::open(".") else {
                return ExitCode::from(9);
            };
            let (mut depth, mut why) = (0u64, "none".to_owned());
            while depth < 1_000_000 {
                if let Err(e) =
                    std::fs::create_dir("d").and_then(|()| std::env::set_current_dir("d"))
                {
                    why = errno(&e);
                    break;
                }
                depth += 1;
            }
            // Climb back out, removing each level, so the answer has an inode to go in.
            for _ in 0..depth {
                if std::env::set_current_dir("..")
                    .and_then(|()| std::fs::remove_dir("d"))
                    .is_err()
                {
                    return ExitCode::from(9);
                }
            }
            if nix::unistd::fchdir(&top).is_err() {
                return ExitCode::from(9);
            }
            respond_ok(&format!("bytes {bytes} {stopped} depth {depth} {why}\n"))
        }
        "two-outputs" => {
            let _ = std::fs::write("out/a.txt", input(&req, "a").unwrap_or("A\n"));
            let _ = std::fs::write("out/b.txt", input(&req, "b").unwrap_or("B\n"));
            println!(r#"{{"protocol":"1.0","status":"ok","outputs":["a.txt","b.txt"]}}"#);
            ExitCode::SUCCESS
        }
        // Writes out/result.txt, then nests `size` directories (default 300) below out/deep by
        // mkdir + chdir (no descriptor per level, no long path), with a file at the bottom.
        "deep" => {
            let depth: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(300);
            let code = respond_ok("deep\n");
            let nested = std::fs::create_dir("out/deep")
                .and_then(|()| std::env::set_current_dir("out/deep"))
                .and_then(|()| {
                    (0..depth).try_for_each(|_| {
                        std::fs::create_dir("d").and_then(|()| std::env::set_current_dir("d"))
                    })
                })
                .and_then(|()| std::fs::write("bottom", b"b"));
            if nested.is_err() {
                return ExitCode::from(9);
            }
            code
        }
        // Writes out/result.txt and `size` (default 5000) files in out/wide/.
        "wide" => {
            let count: usize = input(&req, "size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(5000);
            if std::fs::create_dir("out/wide").is_err()
                || (0..count).any(|i| std::fs::write(format!("out/wide/f{i}"), b"w").is_err())
            {
                return ExitCode::from(9);
            }
            respond_ok("wide\n")
        }
        // Leaves a FIFO in out/sub/ (what a run directory's removal never deletes), then succeeds
        // (`then` = ok) or exits 3 (`then` = fail).
        "leave-fifo" => {
            let made = std::fs::create_dir("out/sub").and_then(|()| {
                nix::unistd::mkfifo(
                    "out/sub/fifo",
                    nix::sys::stat::Mode::from_bits_truncate(0o600),
                )
                .map_err(std::io::Error::from)
            });
            if made.is_err() {
                return ExitCode::from(9);
            }
            match input(&req, "then").unwrap_or("ok") {
                "fail" => ExitCode::from(3),
                _ => respond_ok("fifo left\n"),
            }
        }
        // 30 descendants block on the test's FIFO, then would write a marker; the plugin itself then
        // succeeds (`then` = ok), prints garbage (`malformed`) or hangs past the deadline (`hang`).
        "delayed-children" => {
            let (Some(fifo), Some(marker)) = (input(&req, "fifo"), input(&req, "marker")) else {
                return ExitCode::from(2);
            };
            spawn_waiters(fifo, marker, 30);
            match input(&req, "then").unwrap_or("ok") {
                "malformed" => {
                    println!("not json");
                    ExitCode::SUCCESS
                }
                "hang" => {
                    std::thread::sleep(Duration::from_secs(3600));
                    ExitCode::SUCCESS
                }
                _ => respond_ok("parent done\n"),
            }
        }
        // 1000 children that exit at once, never waited for by the plugin.
        "many-exits" => {
            let mut spawned = 0;
            for _ in 0..1000 {
                if Command::new("/proc/self/exe")
                    .arg("child-exit")
                    .spawn()
                    .is_ok()
                {
                    spawned += 1;
                }
            }
            respond_ok(&format!("{spawned}\n"))
        }
        other => {
            eprintln!("unknown mode {other}");
            ExitCode::from(2)
        }
    }
}
