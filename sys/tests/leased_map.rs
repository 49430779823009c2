//! `sys::fs::map_leased`: a file is mapped only while this process holds a read lease on it, and
//! the mapping holds exactly its bytes.

use std::io::Write;

fn file_with(bytes: &[u8]) -> (std::path::PathBuf, std::fs::File) {
    let dir = std::env::temp_dir().join(format!("dot-sys-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(format!("f{}", bytes.len()));
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(bytes).expect("write");
    drop(f);
    let f = std::fs::File::open(&path).expect("open");
    (path, f)
}

#[test]
fn a_leased_file_is_mapped_whole_and_an_unleased_one_is_not() {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (path, file) = file_with(&bytes);
    assert!(
        sys::fs::map_leased(&file).expect("no error").is_none(),
        "no lease, no mapping"
    );
    sys::fs::read_lease(&file).expect("lease");
    let mapping = sys::fs::map_leased(&file)
        .expect("no error")
        .expect("mapped");
    assert_eq!(mapping.bytes(), &bytes[..]);
    drop(mapping);
    sys::fs::release_lease(&file).expect("release");
    assert!(
        sys::fs::map_leased(&file).expect("no error").is_none(),
        "released"
    );
    std::fs::remove_file(path).expect("remove");
}

#[test]
fn an_empty_leased_file_is_read_not_mapped() {
    let (path, file) = file_with(b"");
    sys::fs::read_lease(&file).expect("lease");
    assert!(sys::fs::map_leased(&file).expect("no error").is_none());
    sys::fs::release_lease(&file).expect("release");
    std::fs::remove_file(path).expect("remove");
}

#[test]
fn a_lease_being_broken_is_not_mapped() {
    let (path, file) = file_with(b"pinned bytes");
    sys::fs::read_lease(&file).expect("lease");
    // A writer asks for the file: it waits for the lease, which now has a break pending.
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || std::fs::OpenOptions::new().write(true).open(path))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sys::fs::lease_held(&file) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        !sys::fs::lease_held(&file),
        "the writer started breaking the lease"
    );
    assert!(sys::fs::map_leased(&file).expect("no error").is_none());
    sys::fs::release_lease(&file).expect("release");
    writer
        .join()
        .expect("joined")
        .expect("the writer got the file");
    std::fs::remove_file(path).expect("remove");
}
