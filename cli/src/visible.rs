//! What a person's terminal shows of text that came from a plugin or a file: every character a
//! terminal would act on, shown escaped ([`visible`]), so that it is read, never executed.

/// `text` with every character a terminal could act on shown as an escape, so that what came
/// from a plugin or a file is read, never executed: the C0 controls (ESC, BEL, CR, backspace, a
/// line break too: the caller splits lines first) and DEL as `\x1b`, the C1 controls, the
/// bidirectional overrides, embeddings, isolates and marks, the line and paragraph separators and
/// the zero-width characters as `\u{202e}`. A backslash stays as it is: the escapes are for a
/// person to read, not to decode. Tabs are kept.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !escaped(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A byte stream from a plugin shown live on a terminal (`dot-launch --stderr pass`): what
/// [`visible`] escapes is escaped, line breaks and tabs pass, bytes that are not UTF-8 show as
/// `\xNN`. A character split across two reads is held until it is whole.
#[derive(Debug, Default)]
pub struct VisibleStream {
    pending: Vec<u8>,
}

impl VisibleStream {
    /// The text to show for `bytes`, the next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(self.pending.len());
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_visible(&mut out, text);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    push_visible(&mut out, std::str::from_utf8(good).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            for b in &bad[..n] {
                                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                            }
                            rest = &bad[n..];
                        }
                        // Incomplete at the end: wait for the rest of the character.
                        None => {
                            rest = bad;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// What is left when the stream ends: an incomplete character, shown as `\xNN` escapes.
    pub fn finish(&mut self) -> Vec<u8> {
        let out = self
            .pending
            .iter()
            .flat_map(|b| format!("\\x{b:02x}").into_bytes())
            .collect();
        self.pending.clear();
        out
    }
}

/// `text` with each of its lines shown as [`visible`]: line breaks and tabs kept.
pub fn visible_lines(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    push_visible(&mut out, text);
    String::from_utf8(out).unwrap_or_default()
}

fn push_visible(out: &mut Vec<u8>, text: &str) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(visible(line).as_bytes());
    }
}

/// Whether [`visible`] escapes `c`.
fn escaped(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{a}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Arabic letter mark; zero-width space, non-joiner, joiner; LRM, RLM.
        | '\u{61c}' | '\u{200b}'..='\u{200f}'
        // Line and paragraph separators; LRE, RLE, PDF, LRO, RLO.
        | '\u{2028}'..='\u{202e}'
        // Word joiner and the invisible operators; LRI, RLI, FSI, PDI; the deprecated format
        // characters.
        | '\u{2060}'..='\u{206f}'
        // Zero-width no-break space (a byte order mark); interlinear annotation.
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_shown_escaped_and_tabs_kept() {
        assert_eq!(
            visible("plain \\ text\twith a tab"),
            "plain \\ text\twith a tab"
        );
        assert_eq!(
            visible("\r\u{8}\u{7f}\u{2066}\u{feff}"),
            "\\x0d\\x08\\x7f\\u{2066}\\u{feff}"
        );
        assert_eq!(visible_lines("a\x1b[2J\nb"), "a\\x1b[2J\nb");
    }

    #[test]
    fn a_stream_is_shown_escaped_even_split_mid_character() {
        let mut v = VisibleStream::default();
        let bytes = "a\x1b[2J\u{202e}é\n\tb\u{9b}".as_bytes();
        let mut shown = Vec::new();
        for chunk in bytes.chunks(1) {
            shown.extend(v.feed(chunk));
        }
        shown.extend(v.feed(b"\xff"));
        shown.extend(v.feed(&"é".as_bytes()[..1]));
        shown.extend(v.finish());
        assert_eq!(
            String::from_utf8(shown).unwrap(),
            "a\\x1b[2J\\u{202e}é\n\tb\\u{9b}\\xff\\xc3"
        );
    }
}
