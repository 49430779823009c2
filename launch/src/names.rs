//! Names that reach a terminal or a log: output file names a plugin chose and input keys a caller
//! typed. They may not carry characters that rewrite what a person reads: control characters
//! (newline, escape sequences, DEL, C1) and the invisible format characters that reorder or hide
//! text (bidirectional embeddings, overrides and isolates, zero-width characters, BOM).

/// The invisible formatting characters refused besides Unicode's control characters.
const FORMAT: &[char] = &[
    '\u{061C}', // ARABIC LETTER MARK
    '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', // zero-width, LRM, RLM
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', // embeddings and overrides
    '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}',
    '\u{2064}', // word joiner, invisible operators
    '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', // isolates
    '\u{FEFF}', // zero-width no-break space (BOM)
];

/// The first character of `name` that may not appear in it, if any.
pub fn unsafe_char(name: &str) -> Option<char> {
    name.chars().find(|c| c.is_control() || FORMAT.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_reordering_characters_are_found() {
        for bad in [
            "a\nb",
            "\u{1b}[31mred",
            "x\u{7f}",
            "c1\u{85}",
            "evil\u{202E}txt.exe",
            "iso\u{2066}late",
            "zero\u{200B}width",
            "\u{FEFF}bom",
            "tab\there",
        ] {
            assert!(unsafe_char(bad).is_some(), "{bad:?}");
        }
        for good in ["hello.txt", "naïve-résumé.csv", "データ.json", "a b", "-x"] {
            assert_eq!(unsafe_char(good), None, "{good:?}");
        }
    }
}
