//! SHA-256 of an open file, streamed with positioned reads.

use proto::Sha256;
use sha2::Digest as _;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The read size: 128 KiB keeps the per-call cost near 1% of the hashing while the buffer stays in
/// the CPU's L2 cache and costs 32 page faults, not 256 (measured in BENCHMARKS.md's digest rows:
/// a 1 MiB buffer made every launch's digest of a 1.4 MB plugin ~0.3 ms slower).
pub const CHUNK: usize = 1 << 17;

/// The SHA-256 and byte length of `file`'s contents, read from offset 0 to end of file in
/// `CHUNK`-sized positioned reads (`pread`): the file offset is neither used nor moved, so the same
/// descriptor can be digested, checked and executed in any order.
pub fn digest_file(file: &File) -> io::Result<(Sha256, u64)> {
    digest_file_with(file, |_| Ok(()))
}

/// `digest_file`, handing every chunk to `sink` as it is hashed (to copy exactly the bytes that were
/// digested).
pub fn digest_file_with(
    file: &File,
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(Sha256, u64)> {
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut offset: u64 = 0;
    loop {
        let n = match file.read_at(&mut buf, offset) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        sink(chunk)?;
        offset += n as u64;
    }
    Ok((Sha256(hasher.finalize().into()), offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    #[test]
    fn digest_ignores_the_file_offset_and_spans_chunks() {
        let path = std::env::temp_dir().join(format!("verify-digest-{}", std::process::id()));
        let data: Vec<u8> = (0..(CHUNK * 2 + 17)).map(|i| (i % 251) as u8).collect();
        let mut f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("create");
        f.write_all(&data).expect("write");
        f.seek(SeekFrom::Start(5)).expect("seek");
        let (d, n) = digest_file(&f).expect("digest");
        std::fs::remove_file(&path).expect("cleanup");
        assert_eq!(n, data.len() as u64);
        assert_eq!(d, Sha256::of(&data));
    }
}
