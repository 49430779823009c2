//! The command line of `dot-register`. The doc comments are the `--help` text.

use argh::FromArgs;
use proto::limits::Preset;
use proto::publisher::Level;
use proto::Containment;
use std::path::PathBuf;

/// Create a platform root, manage its trusted publishers, register signed plugins (or local
/// plugins in a development root), remove and list them. Prints JSON on stdout; on failure one
/// error object on stderr and exit 1 (refused), 2 (malformed input) or 5 (I/O). Every check runs
/// before anything is written.
#[derive(FromArgs, Debug)]
pub struct Args {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Init(InitArgs),
    Publisher(PublisherArgs),
    Add(AddArgs),
    Dev(DevArgs),
    Remove(RemoveArgs),
    List(ListArgs),
    Deny(DenyArgs),
    Policy(PolicyArgs),
    Entry(EntryArgs),
    Mask(MaskArgs),
    Unmask(UnmaskArgs),
}

/// Create a platform root (directories mode 0700), or check an existing one (idempotent).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "init")]
pub struct InitArgs {
    /// the root directory (its parent must exist)
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the state directory (txn/, the launch audit log), apart from the root; its parent must
    /// exist (default: the root itself)
    #[argh(option, from_str_fn(cli::path))]
    pub state: Option<PathBuf>,
    /// make a development root (writes the DEV marker); an existing root without it becomes
    /// one only while it holds no registrations (no file in plugins.d or trust/publishers)
    #[argh(switch)]
    pub dev: bool,
    /// make a system layer (a vendor layer staged under DESTDIR for a package, or the admin
    /// layer): registry directories only, mode 0755, files written 0644, no txn/ and no audit.log
    #[argh(switch)]
    pub layer: bool,
}

/// Manage the trust store: the publishers whose signatures are accepted.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "publisher")]
pub struct PublisherArgs {
    #[argh(subcommand)]
    pub command: PublisherCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum PublisherCommand {
    Add(PublisherAddArgs),
    Rotate(PublisherRotateArgs),
    Revoke(PublisherRevokeArgs),
    List(PublisherListArgs),
    Transition(PublisherTransitionArgs),
    Threshold(PublisherThresholdArgs),
    Level(PublisherLevelArgs),
    Names(PublisherNamesArgs),
}

/// Trust a publisher's minisign public key (adds the key to an existing publisher).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
pub struct PublisherAddArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id (a name: [a-z0-9][a-z0-9._-]{0,63})
    #[argh(option)]
    pub id: String,
    /// the public key file, as `minisign -G` writes it
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: PathBuf,
    /// staging a package's vendor layer under DESTDIR: registry files only, no audit.log line
    #[argh(switch)]
    pub staging: bool,
    /// signatures timestamped earlier are not accepted from this key (Unix seconds or ISO 8601,
    /// e.g. 2027-01-01 or 2027-01-01T12:00:00Z)
    #[argh(option, from_str_fn(proto::time::instant))]
    pub not_before: Option<u64>,
    /// signatures timestamped at or after this are not accepted from this key (Unix seconds or
    /// ISO 8601)
    #[argh(option, from_str_fn(proto::time::instant))]
    pub not_after: Option<u64>,
    /// a new publisher's level: trusted (the default: its entries run at the containment they
    /// require) or verified (its entries run only under process)
    #[argh(option)]
    pub level: Option<Level>,
    /// a new publisher's name pins: a glob of the plugin names it may sign (`*` within a name);
    /// repeatable; none: any name no other publisher pins
    #[argh(option)]
    pub names: Vec<String>,
}

/// Set how many distinct keys of a publisher must sign each of its entries (raising it makes
/// entries with fewer signatures fail verification; every change is recorded).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "threshold")]
pub struct PublisherThresholdArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// the number of distinct keys, from 1 to the publisher's keys that are not revoked
    #[argh(option)]
    pub signatures: u32,
}

/// Set a publisher's level: trusted, or verified (its entries run only under process); recorded.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "level")]
pub struct PublisherLevelArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// trusted or verified
    #[argh(option)]
    pub level: Level,
}

/// Set the plugin names a publisher may sign (its pins); without --names, any name no other
/// publisher pins. Recorded.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "names")]
pub struct PublisherNamesArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// a glob of plugin names (`*` within a name); repeatable
    #[argh(option)]
    pub names: Vec<String>,
}

/// Add a new key to a publisher, accepted only with a transition statement signed by a currently
/// valid key of that publisher (or, recorded in the audit log, on the owner's --force-by-owner).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rotate")]
pub struct PublisherRotateArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// the new public key file, as `minisign -G` writes it
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: PathBuf,
    /// the transition statement's signature FILE.minisig (the statement is FILE); a path not
    /// ending in .minisig names the statement, its signature beside it
    #[argh(option, from_str_fn(cli::path))]
    pub transition: Option<PathBuf>,
    /// accept the new key without a transition statement: the root owner's decision, recorded
    #[argh(switch)]
    pub force_by_owner: bool,
    /// signatures timestamped earlier are not accepted from the new key (Unix seconds or ISO 8601,
    /// e.g. 2027-01-01 or 2027-01-01T12:00:00Z)
    #[argh(option, from_str_fn(proto::time::instant))]
    pub not_before: Option<u64>,
    /// signatures timestamped at or after this are not accepted from the new key (Unix seconds or
    /// ISO 8601)
    #[argh(option, from_str_fn(proto::time::instant))]
    pub not_after: Option<u64>,
}

/// Revoke a publisher (all its keys), or one key with --key. Entries it signed stop verifying.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "revoke")]
pub struct PublisherRevokeArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// why (recorded in the trust store)
    #[argh(option)]
    pub reason: String,
    /// revoke only this key id (up to 16 uppercase hex digits, as minisign prints it)
    #[argh(option)]
    pub key: Option<String>,
}

/// List the trusted publishers (JSON array of publisher records).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub struct PublisherListArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
}

/// Register a signed plugin: checks the entry, its signature by a trusted publisher, the
/// executable's size and digest (and static ELF for `process`), then pins the executable in the
/// store and writes the entry and its signature.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
pub struct AddArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the entry file (JSON), exactly as signed
    #[argh(option, from_str_fn(cli::path))]
    pub entry: PathBuf,
    /// the entry's minisign signature (ENTRY.minisig); repeatable, one per key, for a publisher
    /// whose threshold is above 1
    #[argh(option, from_str_fn(cli::path))]
    pub signature: Vec<PathBuf>,
    /// the plugin executable the entry describes
    #[argh(option, from_str_fn(cli::path))]
    pub exe: PathBuf,
    /// replace an already registered plugin of the same name
    #[argh(switch)]
    pub replace: bool,
    /// accept a version lower than the name's high-water version (rollback), recorded; the
    /// high-water mark stays
    #[argh(switch)]
    pub allow_downgrade: bool,
    /// set the name's high-water version to this entry's, even if lower (after a bogus version
    /// signed by a compromised key), recorded
    #[argh(switch)]
    pub reset_high_water: bool,
    /// accept an audit executable that is a script or dynamic ELF (its interpreter and libraries
    /// are not pinned), recorded
    #[argh(switch)]
    pub allow_dynamic: bool,
    /// with --replace: consent to the exact widening named by sha256:HEX (printed by the refusal)
    #[argh(option)]
    pub accept_changes: Option<String>,
    /// staging a package's vendor layer under DESTDIR: registry files only, no audit.log line
    /// and no trust/high-water.json
    #[argh(switch)]
    pub staging: bool,
}

cli::with_limit_options! {
    role = " replaces the preset's value in the entry";
    /// Register a local plugin in a development root (trust "local", no signature): pins the
    /// executable and writes an entry built from these options.
    #[derive(FromArgs, Debug)]
    #[argh(subcommand, name = "dev")]
    pub struct DevArgs {
        /// the development root
        #[argh(option, from_str_fn(cli::path))]
        pub root: PathBuf,
        /// the plugin name
        #[argh(option)]
        pub name: String,
        /// the plugin executable
        #[argh(option, from_str_fn(cli::path))]
        pub exe: PathBuf,
        /// the containment it requires: audit or process
        #[argh(option)]
        pub containment: Containment,
        /// with --containment process: a read-only host directory (absolute, e.g. /usr) the plugin's
        /// interpreter or shared libraries come from, bound at the same path into the run's private
        /// root (repeatable; a script or dynamic program needs one, and its files are not pinned)
        #[argh(option)]
        pub runtime: Vec<proto::RuntimeDir>,
        /// an environment variable name the invoker may give the plugin a value for (dot-launch --env
        /// NAME=VALUE), [A-Z_][A-Z0-9_]*, not LD_* nor a name that changes how a loader, the C library,
        /// an interpreter or a shell behaves (docs/registry.md); repeatable
        #[argh(option)]
        pub env: Vec<proto::EnvName>,
        /// the plugin's version written into the entry (semantic version, default 0.1.0; not
        /// the tool's own -V/--version)
        #[argh(option, default = "String::from(\"0.1.0\")")]
        pub version: String,
        /// the protocol requirement (default ">=1.0, <2")
        #[argh(option, default = "String::from(\">=1.0, <2\")")]
        pub protocol: String,
        /// a declared input, NAME:string or NAME:file, with :optional appended if not required;
        /// repeatable
        #[argh(option)]
        pub input: Vec<String>,
        /// replace an already registered plugin of the same name
        #[argh(switch)]
        pub replace: bool,
        /// accept an audit executable that is a script or dynamic ELF, recorded
        #[argh(switch)]
        pub allow_dynamic: bool,
        /// with --replace: consent to the exact widening named by sha256:HEX (printed by the refusal)
        #[argh(option)]
        pub accept_changes: Option<String>,
        /// the limits preset the entry declares: standard (the default: 1 GiB, 256 tasks, 64
        /// descriptors, 256 outputs of 64 MiB, 30 s) or strict (docs/protocol.md "Limits")
        #[argh(option)]
        pub preset: Option<Preset>,
    }
}

/// Remove a plugin's entry and signature (its pinned executable stays in the store).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "remove")]
pub struct RemoveArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the plugin name
    #[argh(option)]
    pub name: String,
}

/// List the registered plugins, each verified as dot-verify entry does (JSON array with `valid`
/// and, when not valid, the `problem` error object). Without --root: every system layer, each
/// entry with its `layer` and `status` (active, overridden, masked), and the admin's masks.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub struct ListArgs {
    /// the platform root (default: the system layers)
    #[argh(option, from_str_fn(cli::path))]
    pub root: Option<PathBuf>,
    /// without --root: the directory the system layers are under (as dpkg --root)
    #[argh(option, from_str_fn(cli::path))]
    pub sysroot: Option<PathBuf>,
}

/// Mask NAME in the admin layer (plugins.d/NAME.mask): no layer's entry of NAME is accepted until
/// `unmask`. A name no layer has may be masked (a package installed later stays hidden). Makes the
/// admin layer when it does not exist.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "mask")]
pub struct MaskArgs {
    /// the plugin name
    #[argh(positional)]
    pub name: String,
    /// the directory the system layers are under (as dpkg --root; default /)
    #[argh(option, from_str_fn(cli::path))]
    pub sysroot: Option<PathBuf>,
}

/// Remove the admin layer's mask of NAME, if there is one.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "unmask")]
pub struct UnmaskArgs {
    /// the plugin name
    #[argh(positional)]
    pub name: String,
    /// the directory the system layers are under (as dpkg --root; default /)
    #[argh(option, from_str_fn(cli::path))]
    pub sysroot: Option<PathBuf>,
}

/// The deny list (trust/deny.json): executable or entry digests and key ids refused everywhere,
/// before any other check.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "deny")]
pub struct DenyArgs {
    #[argh(subcommand)]
    pub command: DenyCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum DenyCommand {
    Add(DenyAddArgs),
    Remove(DenyRemoveArgs),
    List(DenyListArgs),
}

/// Deny a digest or a key (exactly one of --sha256, --key, --pubkey). A key is denied by its
/// bytes too: listed or signing under another key id, it stays denied.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
pub struct DenyAddArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// a sha256 (64 lowercase hex digits) of an executable or an entry file
    #[argh(option)]
    pub sha256: Option<String>,
    /// a minisign key id (up to 16 uppercase hex digits, as minisign prints it); the bytes of the trust store's key of that
    /// id are denied with it
    #[argh(option)]
    pub key: Option<String>,
    /// a public key file, as `minisign -G` writes it: its key id and its bytes are denied
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: Option<PathBuf>,
    /// why (recorded)
    #[argh(option)]
    pub reason: String,
}

/// Take a digest or key off the deny list (exactly one of --sha256, --key, --pubkey).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "remove")]
pub struct DenyRemoveArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// the denied sha256
    #[argh(option)]
    pub sha256: Option<String>,
    /// the denied key id (and the bytes of the trust store's keys of that id)
    #[argh(option)]
    pub key: Option<String>,
    /// a public key file: its key id and its bytes
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: Option<PathBuf>,
}

/// Print the deny list (JSON).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub struct DenyListArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
}

/// The root's trust policy (trust/policy.json): size limits, maximum signature age, expiry warning.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "policy")]
pub struct PolicyArgs {
    #[argh(subcommand)]
    pub command: PolicyCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum PolicyCommand {
    Set(PolicySetArgs),
    Show(PolicyShowArgs),
}

/// Change the named settings (the others keep their value); prints the whole policy.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "set")]
pub struct PolicySetArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
    /// refuse signatures whose trusted timestamp is older than this many seconds (0: no limit)
    #[argh(option)]
    pub max_signature_age_secs: Option<u64>,
    /// warn this many days before an entry expires (default 14)
    #[argh(option)]
    pub expiry_warning_days: Option<u64>,
    /// largest entry file in bytes (at most and default 65536)
    #[argh(option)]
    pub max_entry_bytes: Option<u64>,
    /// largest signature file in bytes (default 4096)
    #[argh(option)]
    pub max_signature_bytes: Option<u64>,
    /// largest public key file in bytes (default 4096)
    #[argh(option)]
    pub max_key_bytes: Option<u64>,
    /// largest pinned executable in bytes (default 268435456, 256 MiB)
    #[argh(option)]
    pub max_exe_bytes: Option<u64>,
    /// a path glob dot-launch --input-file refuses besides its built-in list (absolute; `*`
    /// within a component, `**` across); repeatable, added to the policy's list
    #[argh(option)]
    pub sensitive_input: Vec<String>,
    /// empty the policy's own list of sensitive input paths first (the built-in list stays)
    #[argh(switch)]
    pub clear_sensitive_inputs: bool,
    /// a host directory an entry's runtime may be or lie beneath (default /usr only); repeatable,
    /// added to the policy's list
    #[argh(option)]
    pub runtime_root: Vec<proto::RuntimeDir>,
    /// empty the policy's list of runtime roots first (then no runtime is allowed until one is
    /// added)
    #[argh(switch)]
    pub clear_runtime_roots: bool,
}

/// Print the effective policy (JSON; defaults when trust/policy.json is absent).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
pub struct PolicyShowArgs {
    /// the platform root
    #[argh(option, from_str_fn(cli::path))]
    pub root: PathBuf,
}

/// For publishers: print the statement that `publisher rotate --transition` accepts, to be signed
/// with a current key of the publisher (`minisign -S -s CURRENT.key -m FILE`). Needs no root.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "transition")]
pub struct PublisherTransitionArgs {
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// the new public key file, as `minisign -G` writes it
    #[argh(option, from_str_fn(cli::path))]
    pub pubkey: PathBuf,
}

/// For publishers: documents to sign.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "entry")]
pub struct EntryArgs {
    #[argh(subcommand)]
    pub command: EntryCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum EntryCommand {
    New(EntryNewArgs),
}

cli::with_limit_options! {
    role = " replaces the preset's value in the entry";
    /// Print a signed-plugin entry for an executable (its SHA-256 and size taken from the file, the
    /// rest from these options), ready for `minisign -S -s KEY -m FILE`. Needs no root; the
    /// executable is checked as `add` will check it (a `process` plugin must be a static ELF).
    #[derive(FromArgs, Debug)]
    #[argh(subcommand, name = "new")]
    pub struct EntryNewArgs {
        /// the plugin name
        #[argh(option)]
        pub name: String,
        /// the plugin executable, exactly as it will be shipped
        #[argh(option, from_str_fn(cli::path))]
        pub exe: PathBuf,
        /// the publisher id whose key will sign the entry
        #[argh(option)]
        pub publisher: String,
        /// the containment it requires: audit or process
        #[argh(option)]
        pub containment: Containment,
        /// with --containment process: a read-only host directory (absolute, e.g. /usr) the plugin's
        /// interpreter or shared libraries come from, bound at the same path into the run's private
        /// root (repeatable; a script or dynamic program needs one, and its files are not pinned)
        #[argh(option)]
        pub runtime: Vec<proto::RuntimeDir>,
        /// an environment variable name the invoker may give the plugin a value for (dot-launch --env
        /// NAME=VALUE), [A-Z_][A-Z0-9_]*, not LD_* nor a name that changes how a loader, the C library,
        /// an interpreter or a shell behaves (docs/registry.md); repeatable
        #[argh(option)]
        pub env: Vec<proto::EnvName>,
        /// the plugin's version written into the entry (semantic version; not the tool's own
        /// -V/--version)
        #[argh(option)]
        pub version: String,
        /// the protocol requirement (default ">=1.0, <2")
        #[argh(option, default = "String::from(\">=1.0, <2\")")]
        pub protocol: String,
        /// a declared input, NAME:string or NAME:file, with :optional appended if not required;
        /// repeatable
        #[argh(option)]
        pub input: Vec<String>,
        /// the entry is refused from this time on (Unix seconds or ISO 8601, e.g. 2027-06-30)
        #[argh(option, from_str_fn(proto::time::instant))]
        pub expires: Option<u64>,
        /// the limits preset the entry declares: standard (the default: 1 GiB, 256 tasks, 64
        /// descriptors, 256 outputs of 64 MiB, 30 s) or strict (docs/protocol.md "Limits")
        #[argh(option)]
        pub preset: Option<Preset>,
    }
}

impl DevArgs {
    /// The limits these options declare.
    pub fn limits(&self) -> Option<proto::limits::DeclaredLimits> {
        proto::limits::DeclaredLimits::from_options(self.preset, self.limit_options())
    }
}

impl EntryNewArgs {
    /// The limits these options declare.
    pub fn limits(&self) -> Option<proto::limits::DeclaredLimits> {
        proto::limits::DeclaredLimits::from_options(self.preset, self.limit_options())
    }
}
