//! The rules Kubernetes applies to API groups, versions, kinds and resource names, as checks with
//! messages that say how to fix the value.

/// Kubernetes' limit on DNS subdomains.
const MAX_SUBDOMAIN: usize = 253;
/// Kubernetes' limit on DNS labels.
const MAX_LABEL: usize = 63;

fn is_label(s: &str, first_may_be_digit: bool) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            (if first_may_be_digit {
                alnum(first)
            } else {
                first.is_ascii_lowercase()
            }) && alnum(last)
                && bytes.iter().all(|&b| alnum(b) || b == b'-')
                && bytes.len() <= MAX_LABEL
        }
        _ => false,
    }
}

/// Any API group, Kubernetes' own included: a DNS subdomain (RFC 1123).
pub(crate) fn any_group(group: &str) -> Result<(), String> {
    if group.is_empty()
        || group.len() > MAX_SUBDOMAIN
        || !group.split('.').all(|l| is_label(l, true))
    {
        return Err(format!(
            "group {group:?} is not a DNS subdomain: use lowercase letters, digits, '-' and '.', each \
             dot-separated part starting and ending with a letter or digit, e.g. \"velero.services.open-control-plane.io\""
        ));
    }
    Ok(())
}

/// The group of a Service API: a DNS subdomain (RFC 1123) with at least one dot.
pub(crate) fn group(group: &str) -> Result<(), String> {
    any_group(group)?;
    if !group.contains('.') {
        return Err(format!(
            "group {group:?} needs a dot: Kubernetes reserves undotted groups for its own APIs; \
             use a domain you own, e.g. \"{group}.services.open-control-plane.io\""
        ));
    }
    Ok(())
}

/// A Kubernetes API version: `v1`, `v1alpha1`, `v2beta3`.
pub(crate) fn version(version: &str) -> Result<(), String> {
    let valid = (|| {
        let rest = version.strip_prefix('v')?;
        let major_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, rest) = rest.split_at(major_len);
        if major.is_empty() || major.starts_with('0') {
            return None;
        }
        if rest.is_empty() {
            return Some(());
        }
        let minor = rest
            .strip_prefix("alpha")
            .or_else(|| rest.strip_prefix("beta"))?;
        (!minor.is_empty() && !minor.starts_with('0') && minor.bytes().all(|b| b.is_ascii_digit()))
            .then_some(())
    })();
    valid.ok_or_else(|| {
        format!("version {version:?} is not a Kubernetes API version: write it like \"v1\", \"v1alpha1\" or \"v2beta3\"")
    })
}

/// The kind of a Service API: any kind but `ProviderConfig`.
pub(crate) fn kind(kind: &str) -> Result<(), String> {
    any_kind(kind)?;
    if kind == "ProviderConfig" {
        return Err("kind \"ProviderConfig\" is taken: every provider's group also has a ProviderConfig kind; \
                    name the Service API after the service, e.g. \"Velero\""
            .to_owned());
    }
    Ok(())
}

/// A namespace name: a DNS label.
pub(crate) fn namespace(namespace: &str) -> Result<(), String> {
    if is_label(namespace, true) {
        Ok(())
    } else {
        Err(format!(
            "namespace {namespace:?} is not a valid namespace name: use lowercase letters, digits \
             and '-', starting and ending with a letter or digit, at most 63 characters"
        ))
    }
}

/// A kind: UpperCamelCase, usable as a Rust type name.
pub(crate) fn any_kind(kind: &str) -> Result<(), String> {
    let valid = kind.len() <= MAX_LABEL
        && kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !valid {
        let suggestion: String = kind
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|part| !part.is_empty())
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        let hint = if suggestion.starts_with(|c: char| c.is_ascii_uppercase()) {
            format!("e.g. {suggestion:?}")
        } else {
            "e.g. \"Velero\"".to_owned()
        };
        return Err(format!(
            "kind {kind:?} is not UpperCamelCase: start with an uppercase letter and use only letters and digits, {hint}"
        ));
    }
    Ok(())
}

/// A lower-case resource name (plural, singular, short name, category): a DNS label starting with
/// a letter.
pub(crate) fn resource_name(what: &str, name: &str) -> Result<(), String> {
    if is_label(name, false) {
        Ok(())
    } else {
        Err(format!(
            "{what} {name:?} is not a valid resource name: use lowercase letters, digits and '-', \
             starting with a letter, at most 63 characters"
        ))
    }
}

/// The singular of a kind as kube-derive computes it.
pub(crate) fn singular(kind: &str) -> String {
    kind.to_ascii_lowercase()
}

/// The plural of a kind as controller-gen makes it, so a provider written with this framework
/// names its Service API CRD as the Go provider it replaces did (`Velero` → `veleroes`, CRD
/// `veleroes.<group>`), and `init` finds the CRD the Go provider installed instead of creating a
/// second one for the same kind.
///
/// controller-gen (`pkg/crd/spec.go`) computes `strings.ToLower(flect.Pluralize(kind))` with
/// gobuffalo/flect v1.0.3, whose rules are, in order:
/// 1. the kind is split into words at lower→upper case changes (and after a known acronym such
///    as `DNS`, `API`, `ID`); only the last word is inflected;
/// 2. a whole kind that is a dictionary word takes its plural (`ID` → `IDs`); one that is
///    already a dictionary plural stays;
/// 3. a last word that is (in lower case) a dictionary plural stays; a dictionary singular takes
///    its plural (`Index` → `Indices`, `Person` → `People`, `Equipment` stays);
/// 4. the first suffix rule that matches the last word (case-sensitive) rewrites it: first the
///    dictionary words as suffixes (`...man` → `...men`), then `-fe`/`-f` → `-ves`, `-y` after a
///    consonant → `-ies`, `-eau` → `-eaux`, Latin and Greek endings (`-ium` → `-ia`, `-trix` →
///    `-trices`, `-sis` → `-ses`, …), `-us` → `-uses`, `-ch`/`-sh`/`-ss`/`-x` → `-es`, `-z` →
///    `-zes`/`-zzes`, `-o` → `-oes` except `-io`, `-ano`, `-lo`, `-to`, `-oo` (→ `-s`); a word
///    already ending in a rule's plural stays;
/// 5. else a word ending in `s` stays, and any other gets `s`.
///
/// So `Velero` → `veleroes`, `Kro` → `kroes`, `Flux` → `fluxes`, `Policy` → `policies`,
/// `Status` → `statuses`, `Index` → `indices`, `Metrics` → `metrics`, `Foo` → `foos`.
/// (controller-gen also reads extra rules from an `inflections.json` in its working directory;
/// providers have none.) `plural = "..."` in the attribute overrides the result.
pub(crate) fn plural(kind: &str) -> String {
    flect::pluralize(kind).to_lowercase()
}

/// gobuffalo/flect v1.0.3's `Pluralize`, rule for rule (see [`plural`]).
pub(crate) mod flect {
    /// `baseAcronyms` (acronyms.go).
    const ACRONYMS: &[&str] = &[
        "OK", "UTF8", "HTML", "JSON", "JWT", "ID", "UUID", "SQL", "ACK", "ACL", "ADSL", "AES",
        "ANSI", "API", "ARP", "ATM", "BGP", "BSS", "CCITT", "CHAP", "CIDR", "CIR", "CLI", "CPE",
        "CPU", "CRC", "CRT", "CSMA", "CMOS", "DCE", "DEC", "DES", "DHCP", "DNS", "DRAM", "DSL",
        "DSLAM", "DTE", "DMI", "EHA", "EIA", "EIGRP", "EOF", "ESS", "FCC", "FCS", "FDDI", "FTP",
        "GBIC", "GEPOF", "HDLC", "HTTP", "HTTPS", "IANA", "ICMP", "IDF", "IDS", "IEEE", "IETF",
        "IMAP", "IP", "IPS", "ISDN", "ISP", "LACP", "LAN", "LAPB", "LAPF", "LLC", "MAC", "MC",
        "MDF", "MIB", "MPLS", "MTU", "NAC", "NAT", "NBMA", "NIC", "NRZ", "NRZI", "NVRAM", "OSI",
        "OSPF", "OUI", "PAP", "PAT", "PC", "PIM", "PCM", "PDU", "POP3", "POTS", "PPP", "PPTP",
        "PTT", "PVST", "RAM", "RARP", "RFC", "RIP", "RLL", "ROM", "RSTP", "RTP", "RCP", "SDLC",
        "SFD", "SFP", "SLARP", "SLIP", "SMTP", "SNA", "SNAP", "SNMP", "SOF", "SRAM", "SSH", "SSID",
        "STP", "SYN", "TDM", "TFTP", "TIA", "TOFU", "UDP", "URL", "URI", "USB", "UTP", "VC",
        "VLAN", "VLSM", "VPN", "W3C", "WAN", "WEP", "WPA", "WWW",
    ];

    /// One `dictionary` entry (plural_rules.go).
    pub(crate) struct Word {
        pub singular: &'static str,
        /// Empty for an uncountable word (its plural is itself).
        pub plural: &'static str,
        pub alternative: &'static str,
        /// Not in the plural → singular map.
        pub unidirectional: bool,
        /// Only as a whole word, not as a suffix rule.
        pub exact: bool,
    }

    const fn w(singular: &'static str, plural: &'static str) -> Word {
        Word {
            singular,
            plural,
            alternative: "",
            unidirectional: false,
            exact: false,
        }
    }
    const fn alt(singular: &'static str, plural: &'static str, alternative: &'static str) -> Word {
        Word {
            alternative,
            ..w(singular, plural)
        }
    }
    const fn uni(singular: &'static str, plural: &'static str) -> Word {
        Word {
            unidirectional: true,
            ..w(singular, plural)
        }
    }
    const fn exact(singular: &'static str, plural: &'static str) -> Word {
        Word {
            exact: true,
            ..w(singular, plural)
        }
    }

    /// `dictionary` (plural_rules.go), in its order.
    pub(crate) const DICTIONARY: &[Word] = &[
        w("aircraft", "aircraft"),
        alt("beef", "beef", "beefs"),
        w("bison", "bison"),
        uni("blues", "blues"),
        w("chassis", "chassis"),
        w("deer", "deer"),
        alt("fish", "fish", "fishes"),
        w("moose", "moose"),
        w("police", "police"),
        alt("salmon", "salmon", "salmons"),
        w("series", "series"),
        w("sheep", "sheep"),
        alt("shrimp", "shrimp", "shrimps"),
        w("species", "species"),
        alt("swine", "swine", "swines"),
        alt("trout", "trout", "trouts"),
        alt("tuna", "tuna", "tunas"),
        w("you", "you"),
        w("child", "children"),
        exact("ox", "oxen"),
        w("foot", "feet"),
        w("goose", "geese"),
        w("man", "men"),
        w("human", "humans"),
        exact("louse", "lice"),
        w("mouse", "mice"),
        w("tooth", "teeth"),
        w("woman", "women"),
        exact("die", "dice"),
        w("person", "people"),
        alt("adieu", "adieux", "adieus"),
        w("fabliau", "fabliaux"),
        alt("bureau", "bureaus", "bureaux"),
        w("criterion", "criteria"),
        alt("ganglion", "ganglia", "ganglions"),
        alt("lexicon", "lexica", "lexicons"),
        alt("mitochondrion", "mitochondria", "mitochondrions"),
        w("noumenon", "noumena"),
        w("phenomenon", "phenomena"),
        w("taxon", "taxa"),
        w("media", "media"),
        Word {
            alternative: "mediums",
            ..uni("medium", "media")
        },
        alt("stadium", "stadiums", "stadia"),
        alt("aquarium", "aquaria", "aquariums"),
        alt("auditorium", "auditoria", "auditoriums"),
        alt("symposium", "symposia", "symposiums"),
        alt("curriculum", "curriculums", "curricula"),
        w("quota", "quotas"),
        alt("alumnus", "alumni", "alumnuses"),
        w("bacillus", "bacilli"),
        alt("cactus", "cacti", "cactuses"),
        w("coccus", "cocci"),
        alt("focus", "foci", "focuses"),
        alt("locus", "loci", "locuses"),
        alt("nucleus", "nuclei", "nucleuses"),
        alt("octopus", "octupuses", "octopi"),
        alt("radius", "radii", "radiuses"),
        w("syllabus", "syllabi"),
        alt("corpus", "corpora", "corpuses"),
        w("genus", "genera"),
        w("alumna", "alumnae"),
        w("vertebra", "vertebrae"),
        w("differentia", "differentiae"),
        w("minutia", "minutiae"),
        w("vita", "vitae"),
        w("larva", "larvae"),
        w("postcava", "postcavae"),
        w("praecava", "praecavae"),
        w("uva", "uvae"),
        alt("apex", "apices", "apexes"),
        alt("codex", "codices", "codexes"),
        alt("index", "indices", "indexes"),
        alt("latex", "latices", "latexes"),
        alt("vertex", "vertices", "vertexes"),
        alt("vortex", "vortices", "vortexes"),
        alt("appendix", "appendices", "appendixes"),
        alt("radix", "radices", "radixes"),
        alt("helix", "helices", "helixes"),
        exact("axis", "axes"),
        w("crisis", "crises"),
        uni("ellipsis", "ellipses"),
        w("genesis", "geneses"),
        w("oasis", "oases"),
        w("thesis", "theses"),
        w("testis", "testes"),
        w("base", "bases"),
        uni("basis", "bases"),
        exact("alias", "aliases"),
        w("vedalia", "vedalias"),
        exact("use", "uses"),
        w("abuse", "abuses"),
        w("cause", "causes"),
        w("clause", "clauses"),
        w("cruse", "cruses"),
        w("excuse", "excuses"),
        w("fuse", "fuses"),
        w("house", "houses"),
        w("misuse", "misuses"),
        w("muse", "muses"),
        w("pause", "pauses"),
        w("ache", "aches"),
        w("topaz", "topazes"),
        alt("buffalo", "buffaloes", "buffalos"),
        w("potato", "potatoes"),
        w("tomato", "tomatoes"),
        w("equipment", ""),
        w("information", ""),
        w("jeans", ""),
        w("money", ""),
        w("news", ""),
        w("rice", ""),
        alt("dwarf", "dwarfs", "dwarves"),
        alt("hoof", "hoofs", "hooves"),
        w("thief", "thieves"),
        w("chive", "chives"),
        w("hive", "hives"),
        w("move", "moves"),
        w("movie", "movies"),
        w("cookie", "cookies"),
        w("pretorium", "pretoriums"),
        w("agenda", "agendas"),
        alt("formula", "formulas", "formulae"),
        w("shoe", "shoes"),
        exact("toe", "toes"),
        w("graffiti", "graffiti"),
        exact("ID", "IDs"),
    ];

    /// `singularToPluralSuffixList` (plural_rules.go), in its (priority) order.
    const SUFFIXES: &[(&str, &str)] = &[
        ("tive", "tives"),
        ("eaf", "eaves"),
        ("oaf", "oaves"),
        ("afe", "aves"),
        ("arf", "arves"),
        ("rfe", "rves"),
        ("rf", "rves"),
        ("lf", "lves"),
        ("fe", "ves"),
        ("ay", "ays"),
        ("ey", "eys"),
        ("oy", "oys"),
        ("quy", "quies"),
        ("uy", "uys"),
        ("y", "ies"),
        ("eau", "eaux"),
        ("bula", "bulae"),
        ("dula", "bulae"),
        ("lula", "bulae"),
        ("nula", "bulae"),
        ("vula", "bulae"),
        ("hedron", "hedra"),
        ("ium", "ia"),
        ("seum", "seums"),
        ("eum", "ea"),
        ("oum", "oa"),
        ("stracum", "straca"),
        ("dum", "da"),
        ("elum", "ela"),
        ("ilum", "ila"),
        ("olum", "ola"),
        ("ulum", "ula"),
        ("llum", "lla"),
        ("ylum", "yla"),
        ("imum", "ima"),
        ("ernum", "erna"),
        ("gnum", "gna"),
        ("brum", "bra"),
        ("crum", "cra"),
        ("terum", "tera"),
        ("serum", "sera"),
        ("trum", "tra"),
        ("antum", "anta"),
        ("atum", "ata"),
        ("entum", "enta"),
        ("etum", "eta"),
        ("itum", "ita"),
        ("otum", "ota"),
        ("utum", "uta"),
        ("ctum", "cta"),
        ("ovum", "ova"),
        ("trix", "trices"),
        ("iasis", "iases"),
        ("mesis", "meses"),
        ("kinesis", "kineses"),
        ("resis", "reses"),
        ("gnosis", "gnoses"),
        ("opsis", "opses"),
        ("ysis", "yses"),
        ("ouse", "ouses"),
        ("lause", "lauses"),
        ("us", "uses"),
        ("ch", "ches"),
        ("io", "ios"),
        ("sh", "shes"),
        ("ss", "sses"),
        ("ez", "ezzes"),
        ("iz", "izzes"),
        ("tz", "tzes"),
        ("zz", "zzes"),
        ("ano", "anos"),
        ("lo", "los"),
        ("to", "tos"),
        ("oo", "oos"),
        ("o", "oes"),
        ("x", "xes"),
        ("S", "Ses"),
    ];

    impl Word {
        fn plural(&self) -> &'static str {
            if self.plural.is_empty() {
                self.singular
            } else {
                self.plural
            }
        }
    }

    fn is_acronym(upper: &str) -> bool {
        ACRONYMS.contains(&upper)
    }

    /// The separators of `flect.go`'s `spaces`, and Unicode white space.
    const SPACES: [char; 5] = ['_', ' ', ':', '-', '/'];

    fn is_space(c: char) -> bool {
        SPACES.contains(&c) || c.is_whitespace()
    }

    /// Go's `unicode.IsPunct` for ASCII (non-ASCII punctuation is rare in names).
    fn is_punct(c: char) -> bool {
        matches!(
            c,
            '!' | '"'
                | '#'
                | '%'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '_'
                | '{'
                | '}'
        )
    }

    /// `xappend` (flect.go).
    fn push_part(parts: &mut Vec<String>, part: &str) {
        let mut part = part.trim();
        for space in SPACES {
            part = part.trim_matches(space);
        }
        let upper = part.to_uppercase();
        let part = if is_acronym(&upper) {
            upper
        } else {
            part.to_owned()
        };
        if !part.is_empty() {
            parts.push(part);
        }
    }

    /// `toParts` (ident.go): the words of a name.
    pub(crate) fn parts(s: &str) -> Vec<String> {
        let mut parts = Vec::new();
        let s = s.trim();
        if s.is_empty() {
            return parts;
        }
        if is_acronym(&s.to_uppercase()) {
            return vec![s.to_uppercase()];
        }
        let mut prev = '\0';
        let mut word = String::new();
        for c in s.chars() {
            let split = is_space(c)
                || (c.is_uppercase() && !prev.is_uppercase())
                || (c.is_uppercase() && is_acronym(&word.to_uppercase()));
            if split {
                push_part(&mut parts, &word);
                word = c.to_string();
                prev = c;
            } else if c.is_alphanumeric() || is_punct(c) || c == '`' {
                prev = c;
                word.push(c);
            } else {
                push_part(&mut parts, &word);
                word.clear();
                prev = c;
            }
        }
        push_part(&mut parts, &word);
        parts
    }

    fn single_to_plural(word: &str) -> Option<&'static str> {
        DICTIONARY
            .iter()
            .find(|w| w.singular == word)
            .map(Word::plural)
    }

    fn is_dictionary_plural(word: &str) -> bool {
        DICTIONARY.iter().any(|w| {
            !w.unidirectional
                && (w.plural() == word || (!w.alternative.is_empty() && w.alternative == word))
        })
    }

    /// `pluralRules` in their order: the dictionary's (non-exact) words last-first, then the
    /// suffix list; each as "a word ending in the plural stays", then "the singular ending is
    /// replaced".
    fn rules() -> impl Iterator<Item = (&'static str, &'static str)> {
        DICTIONARY
            .iter()
            .rev()
            .filter(|w| !w.exact)
            .map(|w| (w.singular, w.plural()))
            .chain(SUFFIXES.iter().copied())
    }

    /// `strings.TrimSuffix(original, suffix) + new`.
    fn replace_suffix(original: &str, suffix: &str, new: &str) -> String {
        format!("{}{new}", original.strip_suffix(suffix).unwrap_or(original))
    }

    fn capitalize(s: &str) -> String {
        let mut chars = s.chars();
        match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => String::new(),
        }
    }

    /// `flect.Pluralize` (pluralize.go).
    pub(crate) fn pluralize(original: &str) -> String {
        let parts = parts(original);
        let Some(last) = parts.last() else {
            return String::new();
        };
        if let Some(plural) = single_to_plural(original) {
            return plural.to_owned();
        }
        if is_dictionary_plural(original) {
            return original.to_owned();
        }
        let lower = last.to_lowercase();
        if is_dictionary_plural(&lower) {
            return original.to_owned();
        }
        if let Some(plural) = single_to_plural(&lower) {
            let plural = if *last == capitalize(last) {
                capitalize(plural)
            } else {
                plural.to_owned()
            };
            return replace_suffix(original, last, &plural);
        }
        for (singular, plural) in rules() {
            if last.ends_with(plural) {
                return replace_suffix(original, last, last);
            }
            if let Some(stem) = last.strip_suffix(singular) {
                return replace_suffix(original, last, &format!("{stem}{plural}"));
            }
        }
        if lower.ends_with('s') {
            return original.to_owned();
        }
        format!("{original}s")
    }
}

/// The printer column types Kubernetes accepts.
pub(crate) const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];
/// The printer column formats Kubernetes accepts.
pub(crate) const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "binary",
    "date",
    "date-time",
    "password",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups() {
        assert!(group("velero.services.open-control-plane.io").is_ok());
        assert!(group("velero").unwrap_err().contains("needs a dot"));
        assert!(
            group("Velero.io")
                .unwrap_err()
                .contains("not a DNS subdomain")
        );
        assert!(group("velero..io").is_err());
        assert!(group("-velero.io").is_err());
        assert!(group("velero_x.io").is_err());
    }

    #[test]
    fn versions() {
        for ok in ["v1", "v1alpha1", "v2beta3", "v10", "v1beta12"] {
            assert!(version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1", "v0", "v1.0", "V1", "v1alpha", "v1gamma1", "v1alpha0", "v01", "",
        ] {
            assert!(version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        assert!(kind("Velero").is_ok());
        assert!(kind("ExternalSecrets2").is_ok());
        assert!(kind("velero").unwrap_err().contains("e.g. \"Velero\""));
        assert!(
            kind("external_secrets")
                .unwrap_err()
                .contains("\"ExternalSecrets\"")
        );
        assert!(kind("ProviderConfig").is_err());
    }

    /// The kinds of openMCP's providers and what controller-gen made of them.
    #[test]
    fn plurals_match_controller_gen() {
        for (kind, expected) in [
            ("Velero", "veleroes"),
            ("Crossplane", "crossplanes"),
            ("Flux", "fluxes"),
            ("Kro", "kroes"),
            ("Kyverno", "kyvernoes"),
            ("Landscaper", "landscapers"),
            ("ExternalSecretsOperator", "externalsecretsoperators"),
            ("Policy", "policies"),
            ("Proxy", "proxies"),
            ("Status", "statuses"),
            ("Index", "indices"),
            ("Foo", "foos"),
            ("Metrics", "metrics"),
            ("Ocm", "ocms"),
            ("Gateway", "gateways"),
            ("ProviderConfig", "providerconfigs"),
            ("ServiceProvider", "serviceproviders"),
            ("ClusterRequest", "clusterrequests"),
            ("AccessRequest", "accessrequests"),
            ("DNSZone", "dnszones"),
            ("DNS", "dnses"),
            ("ID", "ids"),
            ("WidgetUUID", "widgetuuids"),
            ("Mesh", "meshes"),
            ("Harbor", "harbors"),
            ("Person", "people"),
            ("Equipment", "equipment"),
            ("Analysis", "analyses"),
            ("Matrix", "matrices"),
            ("Photo", "photos"),
            ("Audio", "audios"),
            ("Echo", "echoes"),
        ] {
            assert_eq!(plural(kind), expected, "{kind}");
        }
    }

    /// flect v1.0.3's own vectors (`flect_test.go` `singlePluralAssertions` for which it tests
    /// pluralization, and every dictionary word): `Pluralize(singular)` and
    /// `Pluralize(plural)` are both the plural.
    #[test]
    fn flect_vectors() {
        let table = [
            ("", ""),
            ("Car", "Cars"),
            ("Boy", "Boys"),
            ("GoodBoy", "GoodBoys"),
            ("Axis", "Axes"),
            ("Child", "Children"),
            ("GoodChild", "GoodChildren"),
            ("node_child", "node_children"),
            ("SmartPerson", "SmartPeople"),
            ("great_person", "great_people"),
            ("salesperson", "salespeople"),
            ("custom_field", "custom_fields"),
            ("funky jeans", "funky jeans"),
            ("payment_information", "payment_information"),
            ("sportsEquipment", "sportsEquipment"),
            ("status_code", "status_codes"),
            ("user_custom_field", "user_custom_fields"),
            ("SuperbOx", "SuperbOxen"),
            ("WildOx", "WildOxen"),
            ("wild_ox", "wild_oxen"),
            ("box", "boxes"),
            ("fox", "foxes"),
            ("comment", "comments"),
            ("edge", "edges"),
            ("equipment", "equipment"),
            ("experience", "experiences"),
            ("fleet", "fleets"),
            ("foobar", "foobars"),
            ("mouse", "mice"),
            ("newsletter", "newsletters"),
            ("stack", "stacks"),
            ("user", "users"),
            ("woman", "women"),
            ("human", "humans"),
            ("spokesman", "spokesmen"),
            ("calf", "calves"),
            ("dwarf", "dwarfs"),
            ("elf", "elves"),
            ("half", "halves"),
            ("knife", "knives"),
            ("leaf", "leaves"),
            ("life", "lives"),
            ("loaf", "loaves"),
            ("safe", "saves"),
            ("scarf", "scarves"),
            ("self", "selves"),
            ("sheaf", "sheaves"),
            ("shelf", "shelves"),
            ("thief", "thieves"),
            ("wharf", "wharves"),
            ("wife", "wives"),
            ("wolf", "wolves"),
            ("beef", "beef"),
            ("belief", "beliefs"),
            ("chef", "chefs"),
            ("chief", "chiefs"),
            ("hoof", "hoofs"),
            ("kerchief", "kerchiefs"),
            ("roof", "roofs"),
            ("archive", "archives"),
            ("perspective", "perspectives"),
            ("day", "days"),
            ("hobby", "hobbies"),
            ("agency", "agencies"),
            ("body", "bodies"),
            ("abbey", "abbeys"),
            ("jiffy", "jiffies"),
            ("geology", "geologies"),
            ("geography", "geographies"),
            ("cookie", "cookies"),
            ("sky", "skies"),
            ("supply", "supplies"),
            ("academy", "academies"),
            ("ebony", "ebonies"),
            ("boy", "boys"),
            ("copy", "copies"),
            ("category", "categories"),
            ("embassy", "embassies"),
            ("entity", "entities"),
            ("guy", "guys"),
            ("obsequy", "obsequies"),
            ("navy", "navies"),
            ("proxy", "proxies"),
            ("crazy", "crazies"),
            ("aboideau", "aboideaux"),
            ("beau", "beaux"),
            ("château", "châteaux"),
            ("chateau", "chateaux"),
            ("fabliau", "fabliaux"),
            ("tableau", "tableaux"),
            ("bureau", "bureaus"),
            ("adieu", "adieux"),
            ("tetrahedron", "tetrahedra"),
            ("stadium", "stadiums"),
            ("aquarium", "aquaria"),
            ("auditorium", "auditoria"),
            ("bacterium", "bacteria"),
            ("pretorium", "pretoriums"),
            ("symposium", "symposia"),
            ("amoebaeum", "amoebaea"),
            ("coliseum", "coliseums"),
            ("museum", "museums"),
            ("agenda", "agendas"),
            ("curriculum", "curriculums"),
            ("collum", "colla"),
            ("datum", "data"),
            ("erratum", "errata"),
            ("maximum", "maxima"),
            ("platinum", "platinums"),
            ("serum", "sera"),
            ("spectrum", "spectra"),
            ("opera", "operas"),
            ("alumna", "alumnae"),
            ("larva", "larvae"),
            ("minutia", "minutiae"),
            ("nebula", "nebulae"),
            ("vertebra", "vertebrae"),
            ("vita", "vitae"),
            ("antenna", "antennas"),
            ("formula", "formulas"),
            ("tuna", "tuna"),
            ("quota", "quotas"),
            ("vedalia", "vedalias"),
            ("media", "media"),
            ("multimedia", "multimedia"),
            ("lunch", "lunches"),
            ("search", "searches"),
            ("switch", "switches"),
            ("headache", "headaches"),
            ("marsh", "marshes"),
            ("wish", "wishes"),
            ("bus", "buses"),
            ("campus", "campuses"),
            ("caucus", "caucuses"),
            ("circus", "circuses"),
            ("plus", "pluses"),
            ("prometheus", "prometheuses"),
            ("status", "statuses"),
            ("virus", "viruses"),
            ("use", "uses"),
            ("fuse", "fuses"),
            ("house", "houses"),
            ("spouse", "spouses"),
            ("quiz", "quizzes"),
            ("buzz", "buzzes"),
            ("blitz", "blitzes"),
            ("quartz", "quartzes"),
            ("topaz", "topazes"),
            ("waltz", "waltzes"),
            ("prize", "prizes"),
            ("access", "accesses"),
            ("process", "processes"),
            ("address", "addresses"),
            ("case", "cases"),
            ("database", "databases"),
            ("glimpse", "glimpses"),
            ("horse", "horses"),
            ("lapse", "lapses"),
            ("collapse", "collapses"),
            ("truss", "trusses"),
            ("portfolio", "portfolios"),
            ("piano", "pianos"),
            ("hello", "hellos"),
            ("buffalo", "buffaloes"),
            ("photo", "photos"),
            ("potato", "potatoes"),
            ("tomato", "tomatoes"),
            ("graffiti", "graffiti"),
            ("foo", "foos"),
            ("zoo", "zoos"),
            ("appendix", "appendices"),
            ("codex", "codices"),
            ("index", "indices"),
            ("bodice", "bodices"),
            ("helix", "helices"),
            ("complex", "complexes"),
            ("duplex", "duplexes"),
            ("accomplice", "accomplices"),
            ("slice", "slices"),
            ("matrix", "matrices"),
            ("justice", "justices"),
            ("lattice", "lattices"),
            ("notice", "notices"),
            ("apex", "apices"),
            ("spice", "spices"),
            ("device", "devices"),
            ("service", "services"),
            ("fix", "fixes"),
            ("sex", "sexes"),
            ("invoice", "invoices"),
            ("voice", "voices"),
            ("choice", "choices"),
            ("axis", "axes"),
            ("tax", "taxes"),
            ("eclipse", "eclipses"),
            ("ellipse", "ellipses"),
            ("ellipsis", "ellipses"),
            ("oasis", "oases"),
            ("thesis", "theses"),
            ("hypothesis", "hypotheses"),
            ("parenthesis", "parentheses"),
            ("analysis", "analyses"),
            ("antithesis", "antitheses"),
            ("diagnosis", "diagnoses"),
            ("prognosis", "prognoses"),
            ("synopsis", "synopses"),
            ("synapse", "synapses"),
            ("waste", "wastes"),
            ("psi", "psis"),
            ("pepsi", "pepsis"),
            ("widget_uuid", "widget_uuids"),
            ("WidgetUUID", "WidgetUUIDs"),
            ("widgetUUID", "widgetUUIDs"),
            ("widgetUuid", "widgetUuids"),
            ("widget_UUID", "widget_UUIDs"),
            ("ID", "IDs"),
            ("IDS", "IDSes"),
            ("api", "apis"),
            ("API", "APIs"),
            ("html", "htmls"),
            ("HTML", "HTMLs"),
            ("FYI", "FYIs"),
            ("LAN", "LANs"),
            ("ssh", "sshs"),
            ("SSH", "SSHs"),
            ("eia", "eias"),
            ("EIA", "EIAs"),
            ("DNS", "DNSes"),
        ];
        let dictionary = flect::DICTIONARY.iter().map(|w| {
            let plural = if w.plural.is_empty() {
                w.singular
            } else {
                w.plural
            };
            (w.singular, plural)
        });
        let mut failures = Vec::new();
        for (singular, plural) in table.into_iter().chain(dictionary) {
            for input in [singular, plural] {
                let got = flect::pluralize(input);
                if got != plural {
                    failures.push(format!("Pluralize({input:?}) = {got:?}, want {plural:?}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn words_split_as_in_flect() {
        assert_eq!(
            flect::parts("ExternalSecretsOperator"),
            ["External", "Secrets", "Operator"]
        );
        assert_eq!(flect::parts("DNSZone"), ["DNS", "Zone"]);
        assert_eq!(flect::parts("widget_uuid"), ["widget", "UUID"]);
        assert_eq!(flect::parts("Velero"), ["Velero"]);
    }
}
