//! speedscope: the viewer itself (the `speedscope` npm package's web build, which
//! scripts/test.sh installs under target/speedscope, or the folder `CFGHUB_SPEEDSCOPE` names)
//! served on 127.0.0.1 and opened in headless Chromium imports files cfghub wrote: the page
//! takes the file's name as its title and lists one profile per event.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// The speedscope web build (`dist/release` of the npm package).
fn speedscope_release() -> PathBuf {
    let package = std::env::var_os("CFGHUB_SPEEDSCOPE").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/speedscope/node_modules/speedscope")
    });
    let release = package.join("dist/release");
    assert!(
        release.join("index.html").exists(),
        "the speedscope npm package is not installed at {}; scripts/test.sh installs it",
        package.display()
    );
    release
}

/// Serves the files of `dirs` (first match wins) on 127.0.0.1 from a thread; returns the port.
/// The server answers GET requests for as long as the test runs.
fn serve(dirs: Vec<PathBuf>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            if BufReader::new(&stream).read_line(&mut request).is_err() {
                continue;
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let path = path.split(['?', '#']).next().unwrap().trim_start_matches('/');
            let path = if path.is_empty() { "index.html" } else { path };
            let body =
                (!path.contains("..")).then(|| dirs.iter().find_map(|d| std::fs::read(d.join(path)).ok()));
            let kind = match path.rsplit('.').next() {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("json") => "application/json",
                Some("wasm") => "application/wasm",
                _ => "application/octet-stream",
            };
            let _ = match body.flatten() {
                Some(b) => stream
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|_| stream.write_all(&b)),
                None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            };
        }
    });
    port
}

/// Headless Chromium with the flags this machine's closed network needs, and a fresh profile.
pub fn chromium(user_data: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--virtual-time-budget=15000",
    ])
    .arg(format!("--user-data-dir={}", user_data.display()));
    c
}

/// The DOM speedscope builds after importing `file` (served beside the viewer).
fn open_in_speedscope(dir: &Path, file: &str) -> String {
    let port = serve(vec![speedscope_release(), dir.to_path_buf()]);
    let url = format!("http://127.0.0.1:{port}/index.html#profileURL=http://127.0.0.1:{port}/{file}");
    let mut child = chromium(&dir.join("chromium-profile"))
        .arg("--dump-dom")
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium runs");
    // speedscope reports an import error in an alert box, which a headless browser waits on
    // for ever: such a page is given up after a minute, with nothing dumped.
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut text);
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("speedscope did not finish importing {file} within a minute (an import error?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    reader.join().unwrap()
}

fn convert(args: &[&str]) {
    let o = common::run(&[&["convert", "-q"], args].concat());
    assert!(o.status.success(), "convert {args:?}: {}", common::stderr(&o));
}

#[test]
fn speedscope_imports_what_cfghub_writes() {
    common::require("chromium");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        // Stacks as they are.
        ("dcfg-trace/small.trace.json.expected/replayed-to-folded", "stacks-from-folded", 1),
        // A DCFG: stacks estimated from its call graph, one profile per process.
        ("dcfg/two-processes.dcfg.json", "stacks-from-dcfg", 2),
        // Estimated stacks from a Callgrind profile with instruction positions.
        ("callgrind/callgrind.out.recursion-loops", "stacks-from-callgrind", 1),
        // One frame per function: DCPI samples.
        ("dcpi/alpha-cycles.dcpi", "stacks-from-dcpi", 1),
    ];
    for (input, title, profiles) in cases {
        let file = format!("{title}.speedscope.json");
        convert(&[
            common::fixture(input).to_str().unwrap(),
            "--title",
            title,
            "-o",
            d.join(&file).to_str().unwrap(),
        ]);
        let text = std::fs::read_to_string(d.join(&file)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["$schema"], "https://www.speedscope.app/file-format-schema.json");
        let dom = open_in_speedscope(d, &file);
        assert!(
            dom.contains(&format!("<title>{title} - speedscope</title>")),
            "{input}: not imported:\n{dom}"
        );
        let count = json["profiles"].as_array().unwrap().len();
        assert!(count >= profiles, "{input}");
        if count > 1 {
            assert!(dom.contains(&format!("(1/{count})")), "{input}: {count} profiles listed:\n{dom}");
        }
        assert!(!dom.contains("Something went wrong"), "{input}: {dom}");
    }
}

/// V8 profiles cfghub writes, as `.cpuprofile` files and as Chrome traces (a profile per
/// thread), import into speedscope under their file's name: from V8 profiles, a trace's
/// durations, a Go profile (counts and nanoseconds) and folded stacks (counts alone).
#[test]
fn speedscope_imports_the_v8_profiles_cfghub_writes() {
    common::require("chromium");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        ("cpuprofile/small.cpuprofile", "small.cpuprofile", None, 1),
        ("cpuprofile/small.cpuprofile", "small-trace.json", Some("chrome-trace"), 1),
        ("chrome-trace/burn.chrome-trace.json", "burn.cpuprofile", None, 1),
        ("chrome-trace/nested.json", "nested-trace.json", Some("chrome-trace"), 2),
        ("pprof/burn.cpu.pb.gz", "go.cpuprofile", None, 1),
        (
            "dcfg-trace/small.trace.json.expected/replayed-to-folded",
            "folded-trace.json",
            Some("chrome-trace"),
            1,
        ),
    ];
    for (input, file, to, profiles) in cases {
        let out = d.join(file);
        let mut args = vec![
            common::fixture(input).to_str().unwrap().to_string(),
            "-o".into(),
            out.to_str().unwrap().into(),
        ];
        if let Some(to) = to {
            args.extend(["--to".to_string(), to.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        convert(&args);
        let dom = open_in_speedscope(d, file);
        assert!(
            dom.contains(&format!("<title>{file} - speedscope</title>")),
            "{input} as {file}: not imported:\n{dom}"
        );
        if profiles > 1 {
            assert!(dom.contains(&format!("(1/{profiles})")), "{input}: {profiles} profiles listed:\n{dom}");
        }
        assert!(!dom.contains("Something went wrong"), "{input}: {dom}");
    }
}
