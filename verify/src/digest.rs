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

/// `digest_file` for a file this process holds a read lease on (`sys::fs::read_lease`): read
/// through a mapping of its pages (`sys::fs::map_leased`), no copy made, where the lease makes
/// that safe; else read as [`digest_file`] does. A file of [`PIPELINED_FROM`] bytes or more is
/// read on a second thread while this one hashes ([`digest_pipelined`]), as `dot-verify digest`
/// does: faster than the mapping there (see [`digest_mapped`]).
pub fn digest_leased(file: &File) -> io::Result<(Sha256, u64)> {
    if file.metadata()?.len() >= PIPELINED_FROM {
        return digest_pipelined(file);
    }
    match sys::fs::map_leased(file)? {
        Some(mapping) => {
            let bytes = mapping.bytes();
            Ok((
                Sha256(sha2::Sha256::digest(bytes).into()),
                bytes.len() as u64,
            ))
        }
        None => digest_file(file),
    }
}

/// The window [`digest_mapped`] maps at a time: small enough that one is hashed in well under a
/// millisecond, large enough that the calls cost nothing (measured on a 64 MiB file: 1 MiB
/// windows took the system time of one whole-file mapping).
pub const WINDOW: usize = 1 << 20;

/// The SHA-256 and byte length of a file opened only to be digested (`dot-verify digest`), where
/// this process can take a read lease on it (`sys::fs::read_lease`: it owns the file or holds
/// `CAP_LEASE`, and nobody has it open for writing): hashed through mappings of its pages, a
/// [`WINDOW`] at a time (`sys::fs::map_leased_range`), no copy made — about half the system time
/// of reading it. Else, and from the first window the lease no longer covers, read as
/// [`digest_file`] does. The lease is released before it returns.
///
/// A file of [`PIPELINED_FROM`] bytes or more is read instead, on a second thread while this one
/// hashes what was read ([`digest_pipelined`], still under the lease where one was taken): on a
/// big file the mapping's cost is its pages' TLB misses while they are hashed, which a reading
/// thread moves off the hashing one. Measured on a two-CPU VM, `dot-bench wall`, 30 runs each,
/// mapped / on two threads / `openssl dgst -sha256`: 8 MiB 5.6 / 6.7 / 8.1 ms, 16 MiB 10.4 / 12.0
/// / 13.6 ms, 32 MiB 29.0 / 23.0 / 29.2 ms, 64 MiB 57.9 / 45.6 / 56.0 ms.
pub fn digest_mapped(file: &File) -> io::Result<(Sha256, u64)> {
    let size = file.metadata()?.len();
    let leased = sys::fs::read_lease(file).is_ok();
    let digested = match (size >= PIPELINED_FROM, leased) {
        (true, _) => digest_pipelined(file),
        (false, true) => digest_windows(file, size),
        (false, false) => digest_file(file),
    };
    if leased {
        let released = sys::fs::release_lease(file);
        let digested = digested?;
        released?;
        return Ok(digested);
    }
    digested
}

/// The size from which [`digest_mapped`] reads on a second thread (the smallest measured where
/// that was faster than the mapping: see there).
pub const PIPELINED_FROM: u64 = 32 * WINDOW as u64;

/// The SHA-256 and byte length of `file`, read from offset 0 to its end in [`CHUNK`]-sized
/// positioned reads on a second thread while this one hashes the chunks already read, in order.
/// Buffers go back and forth between the two by move (a few in flight), never copied.
pub fn digest_pipelined(file: &File) -> io::Result<(Sha256, u64)> {
    use std::sync::mpsc;
    const IN_FLIGHT: usize = 4;
    let (to_hasher, chunks) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
    let (give_back, spare) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> io::Result<u64> {
            let mut offset: u64 = 0;
            loop {
                let Some(buf) = next_chunk(file, offset, &spare)? else {
                    return Ok(offset);
                };
                offset += buf.len() as u64;
                if to_hasher.send(buf).is_err() {
                    return Ok(offset); // the hasher is gone: nothing more is wanted
                }
            }
        });
        let mut hasher = sha2::Sha256::new();
        for chunk in chunks {
            hasher.update(&chunk);
            // The reader may be done already.
            let _ = give_back.send(chunk);
        }
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the reading thread panicked")))?;
        Ok((Sha256(hasher.finalize().into()), read))
    })
}

/// `file`'s `size` bytes hashed through leased mappings, a [`WINDOW`] at a time (the rest read,
/// from the first window the lease no longer covers).
fn digest_windows(file: &File, size: u64) -> io::Result<(Sha256, u64)> {
    let mut hasher = sha2::Sha256::new();
    let mut offset: u64 = 0;
    while offset < size {
        let len = usize::try_from(size - offset).map_or(WINDOW, |rest| rest.min(WINDOW));
        match sys::fs::map_leased_range(file, offset, len)? {
            Some(window) => hasher.update(window.bytes()),
            None => break,
        }
        offset += len as u64;
    }
    read_from(file, hasher, offset, |_| Ok(()))
}

/// `digest_file`, handing every chunk to `sink` as it is hashed (to copy exactly the bytes that were
/// digested).
pub fn digest_file_with(
    file: &File,
    sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(Sha256, u64)> {
    read_from(file, sha2::Sha256::new(), 0, sink)
}

/// Reads `file` from `offset` to its end in `CHUNK`-sized positioned reads into `hasher` (and
/// `sink`); returns the digest and the offset reached.
fn read_from(
    file: &File,
    mut hasher: sha2::Sha256,
    mut offset: u64,
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(Sha256, u64)> {
    let mut buf = vec![0u8; CHUNK];
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

/// The next chunk of `file` from `offset` (at most [`CHUNK`] bytes, read in a buffer given back on
/// `spare` or a new one), `None` at its end: the reading side of [`digest_pipelined`] and
/// [`digest_into`].
fn next_chunk(
    file: &File,
    offset: u64,
    spare: &std::sync::mpsc::Receiver<Vec<u8>>,
) -> io::Result<Option<Vec<u8>>> {
    let mut buf = spare.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
    buf.resize(CHUNK, 0);
    let n = loop {
        match file.read_at(&mut buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    if n == 0 {
        return Ok(None);
    }
    buf.truncate(n);
    Ok(Some(buf))
}

/// The SHA-256 and byte length of `src`'s contents, each chunk written to `dst` after it is hashed:
/// `dst` receives exactly the bytes that were digested, whatever happens to `src` meanwhile. The
/// writes run on a second thread while the next chunks are read and hashed (on a sealed copy of a
/// plugin that halves the extra cost of copying); chunks travel between the two by move, never
/// copied, and are written in order.
pub fn digest_into(src: &File, dst: &File) -> io::Result<(Sha256, u64)> {
    use std::sync::mpsc;
    const IN_FLIGHT: usize = 3;
    let (to_writer, chunks) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
    let (give_back, spare) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> io::Result<()> {
            let mut dst = dst;
            for chunk in chunks {
                io::Write::write_all(&mut dst, &chunk)?;
                // The reader may be gone already (it stops at the end or at an error).
                let _ = give_back.send(chunk);
            }
            Ok(())
        });
        let mut hasher = sha2::Sha256::new();
        let mut offset: u64 = 0;
        let read = (|| -> io::Result<()> {
            loop {
                let Some(buf) = next_chunk(src, offset, &spare)? else {
                    return Ok(());
                };
                hasher.update(&buf);
                offset += buf.len() as u64;
                if to_writer.send(buf).is_err() {
                    return Ok(()); // the writer failed: its error is reported below
                }
            }
        })();
        drop(to_writer);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the copying thread panicked")));
        read.and(written)?;
        Ok((Sha256(hasher.finalize().into()), offset))
    })
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

    #[test]
    fn a_big_file_is_digested_whole_and_in_order_on_two_threads() {
        let path = std::env::temp_dir().join(format!("verify-pipelined-{}", std::process::id()));
        // Past the pipelined size, not a whole number of chunks.
        let len = PIPELINED_FROM as usize + CHUNK * 3 + 4099;
        let data: Vec<u8> = (0..len)
            .map(|i| (i % 241) as u8 ^ (i >> 17) as u8)
            .collect();
        std::fs::write(&path, &data).expect("write");
        let f = File::open(&path).expect("open");
        let want = (Sha256::of(&data), data.len() as u64);
        assert_eq!(digest_pipelined(&f).expect("pipelined"), want);
        assert_eq!(digest_mapped(&f).expect("leased"), want);
        assert!(!sys::fs::lease_held(&f), "the lease was released");
        // A launch's digest of its leased copy: the same bytes, the lease kept.
        sys::fs::read_lease(&f).expect("lease");
        assert_eq!(digest_leased(&f).expect("launch"), want);
        assert!(
            sys::fs::lease_held(&f),
            "the launch's lease is its own to release"
        );
        sys::fs::release_lease(&f).expect("release");
        // A writer has it open: no lease, read all the same.
        let writer = File::options().append(true).open(&path).expect("writer");
        assert_eq!(digest_mapped(&f).expect("unleased"), want);
        drop(writer);
        std::fs::remove_file(&path).expect("cleanup");
    }

    #[test]
    fn digest_mapped_gives_the_digest_of_the_bytes_leased_or_not() {
        let path = std::env::temp_dir().join(format!("verify-mapped-{}", std::process::id()));
        // Two whole windows and a part of one: mapped, where the lease can be taken.
        let data: Vec<u8> = (0..(WINDOW * 2 + 4097)).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let f = File::open(&path).expect("open");
        assert_eq!(
            digest_mapped(&f).expect("digest"),
            (Sha256::of(&data), data.len() as u64)
        );
        assert!(!sys::fs::lease_held(&f), "the lease was released");
        // A writer has it open: no lease, so it is read.
        let writer = File::options().append(true).open(&path).expect("writer");
        assert!(sys::fs::read_lease(&f).is_err());
        assert_eq!(
            digest_mapped(&f).expect("digest"),
            (Sha256::of(&data), data.len() as u64)
        );
        drop(writer);
        std::fs::write(&path, b"").expect("empty");
        assert_eq!(digest_mapped(&f).expect("digest"), (Sha256::of(b""), 0));
        std::fs::remove_file(&path).expect("cleanup");
    }

    #[test]
    fn digest_into_copies_exactly_what_it_hashed() {
        let dir = std::env::temp_dir();
        let (src_path, dst_path) = (
            dir.join(format!("verify-into-src-{}", std::process::id())),
            dir.join(format!("verify-into-dst-{}", std::process::id())),
        );
        let data: Vec<u8> = (0..(CHUNK * 5 + 123)).map(|i| (i % 241) as u8).collect();
        std::fs::write(&src_path, &data).expect("write");
        let src = File::open(&src_path).expect("src");
        let dst = File::create(&dst_path).expect("dst");
        let (d, n) = digest_into(&src, &dst).expect("digest_into");
        drop(dst);
        let copied = std::fs::read(&dst_path).expect("read back");
        let _ = std::fs::remove_file(&src_path);
        let _ = std::fs::remove_file(&dst_path);
        assert_eq!((d, n), (Sha256::of(&data), data.len() as u64));
        assert_eq!(copied, data);
    }
}
