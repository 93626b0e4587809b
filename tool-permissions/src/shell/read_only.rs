//! The read-only programs and, for each, the options known to be harmless: any other option,
//! however it is spelled, makes a command count as mutating.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::options::{Scanned, Spec, scan};

/// Programs whose every use with the options listed for them only reads. `git` counts with the
/// subcommands of [`READ_ONLY_GIT`] only.
pub const READ_ONLY_PROGRAMS: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "cmp",
    "column",
    "cut",
    "date",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "false",
    "fgrep",
    "file",
    "find",
    "git",
    "grep",
    "head",
    "id",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "od",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "seq",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sort",
    "stat",
    "tail",
    "tr",
    "tree",
    "true",
    "uname",
    "wc",
    "which",
    "whoami",
];

/// The `git` subcommands that only read (`branch`, `tag`, `remote`, `config` and `stash` only in
/// their listing forms), each with the options known to be harmless.
pub const READ_ONLY_GIT: &[&str] = &[
    "blame",
    "branch",
    "cat-file",
    "config",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "remote",
    "rev-parse",
    "shortlog",
    "show",
    "stash",
    "status",
    "tag",
];

const GREP: &str = "-E -F -G -P -e= -f= -i -y -v -w -x -c --color=? --colour=? -L -l -m= -o -q -s -b -H -h \
    --label= -n -T -Z -z -A= -B= -C= -a -I -r -R -U --binary-files= -D= -d= --exclude= --exclude-from= \
    --exclude-dir= --include= --line-buffered --null --null-data --no-messages --no-filename \
    --with-filename --files-with-matches --files-without-match --count --only-matching --quiet --silent \
    --ignore-case --no-ignore-case --invert-match --word-regexp --line-regexp --line-number \
    --byte-offset --initial-tab --extended-regexp --fixed-strings --basic-regexp --perl-regexp \
    --regexp= --file= --max-count= --after-context= --before-context= --context= --text --recursive \
    --dereference-recursive --devices= --directories=";

const SUMS: &str = "-b -t -c -z -w --binary --text --check --tag --zero --quiet --status --strict --warn \
    --ignore-missing";

/// The options of each program other than `git`, `find`, `echo`, `printf`, `true` and `false`.
static PROGRAMS: LazyLock<HashMap<&'static str, Spec>> = LazyLock::new(|| {
    let specs: &[(&str, &str, bool)] = &[
        ("basename", "-a -s= -z --multiple --suffix= --zero", false),
        (
            "cat",
            "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --number --squeeze-blank \
             --show-ends --show-tabs --show-nonprinting",
            false,
        ),
        ("cd", "-L -P", false),
        (
            "cmp",
            "-b -i= -l -n= -s --print-bytes --ignore-initial= --verbose --bytes= --silent --quiet",
            false,
        ),
        (
            "column",
            "-t -s= -o= -c= -x -n -e -N= -R= -J -l= -L -T= -W= -H= -r= -d -E= -j= --table --separator= \
             --output-separator= --output-width= --fillrows --table-columns= --table-right= \
             --table-truncate= --table-noextreme= --table-wrap= --table-hide= --json --table-noheadings \
             --table-name= --keep-empty-lines --tree= --tree-id= --tree-parent=",
            false,
        ),
        (
            "cut",
            "-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement \
             --only-delimited --output-delimiter= --zero-terminated",
            false,
        ),
        (
            "date",
            "-d= --date= -u --utc --universal -R --rfc-email -I=? --iso-8601=? --rfc-3339= -r= --reference= \
             -f= --file= --debug",
            false,
        ),
        (
            "df",
            "-a -h -H -i -k -l -P -T -t= -x= -B= --all --human-readable --si --inodes --local --portability \
             --print-type --total --output=? --type= --exclude-type= --block-size= --sync --no-sync",
            false,
        ),
        (
            "diff",
            "-u -U= -c -C= -q -s -r -N -a -b -w -B -i -y -W= -p -t -T -e -n -x= -X= -I= -d -E -Z -F= \
             --unified=? --context=? --brief --report-identical-files --recursive --new-file \
             --unidirectional-new-file --text --ignore-space-change --ignore-all-space --ignore-blank-lines \
             --ignore-case --side-by-side --width= --color=? --normal --minimal --strip-trailing-cr \
             --show-c-function --show-function-line= --label= --exclude= --exclude-from= \
             --ignore-matching-lines= --from-file= --to-file= --no-dereference --suppress-common-lines \
             --left-column --expand-tabs --initial-tab --tabsize= --speed-large-files --horizon-lines= \
             --ignore-file-name-case --no-ignore-file-name-case --ignore-tab-expansion \
             --ignore-trailing-space --suppress-blank-empty --new-line-format= --old-line-format= \
             --unchanged-line-format= --line-format= --old-group-format= --new-group-format= \
             --changed-group-format= --unchanged-group-format= --starting-file= --ed --rcs",
            false,
        ),
        ("dirname", "-z --zero", false),
        (
            "du",
            "-a -b -c -h -H -k -L -m -P -s -S -x -d= -t= -X= -l -D -0 -B= --all --apparent-size --bytes \
             --total --human-readable --si --summarize --separate-dirs --one-file-system --max-depth= \
             --threshold= --exclude= --exclude-from= --count-links --dereference --dereference-args \
             --no-dereference --time=? --time-style= --inodes --block-size= --null --files0-from=",
            false,
        ),
        ("egrep", GREP, true),
        ("fgrep", GREP, true),
        ("grep", GREP, true),
        (
            "file",
            "-b -i -L -h -z -Z -k -s -N -E -0 -r -e= -F= -P= -f= --brief --mime --mime-type --mime-encoding \
             --dereference --no-dereference --keep-going --special-files --exclude= --exclude-quiet= \
             --separator= --parameter= --raw --no-pad --print0 --uncompress --uncompress-noreport \
             --preserve-date --files-from= --extension --apple",
            false,
        ),
        ("head", "-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated", true),
        ("id", "-u -g -G -n -r -z -a -Z --user --group --groups --name --real --zero --context", false),
        (
            "jq",
            "-r -j -a -c -n -e -s -S -C -M -R --tab --indent= --arg== --argjson== --slurpfile== --rawfile== \
             --args --jsonargs -f= --from-file= -L= --seq --stream --stream-errors --raw-output \
             --raw-output0 --join-output --ascii-output --compact-output --null-input --exit-status --slurp \
             --sort-keys --color-output --monochrome-output --raw-input --unbuffered",
            false,
        ),
        (
            "ls",
            "-a -A -l -h -R -r -t -S -1 -d -F -p -i -s -n -g -o -G -c -u -U -X -v -x -C -m -L -H -k -Q -N -b \
             -B -q -Z -f -D -I= -w= -T= --all --almost-all --human-readable --recursive --reverse \
             --directory --classify=? --color=? --group-directories-first --inode --size \
             --numeric-uid-gid --sort= --time= --time-style= --full-time --ignore= --hide= \
             --indicator-style= --quoting-style= --width= --tabsize= --block-size= --dereference \
             --dereference-command-line --dereference-command-line-symlink-to-dir --literal --escape \
             --hyperlink=? --context --si --author --file-type --no-group --ignore-backups \
             --quote-name --hide-control-chars --show-control-chars --format= --zero --dired",
            false,
        ),
        ("md5sum", SUMS, false),
        (
            "nl",
            "-b= -d= -f= -h= -i= -l= -n= -p -s= -v= -w= --body-numbering= --section-delimiter= \
             --footer-numbering= --header-numbering= --line-increment= --join-blank-lines= \
             --number-format= --no-renumber --number-separator= --starting-line-number= --number-width=",
            false,
        ),
        (
            "od",
            "-A= -j= -N= -t= -v -w=? -a -b -c -d -f -i -l -o -s -x -S=? --address-radix= --skip-bytes= \
             --read-bytes= --format= --output-duplicates --width=? --endian= --strings=? --traditional",
            false,
        ),
        ("pwd", "-L -P", false),
        (
            "readlink",
            "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing \
             --no-newline --quiet --silent --verbose --zero",
            false,
        ),
        (
            "realpath",
            "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet \
             --strip --no-symlinks --zero --relative-to= --relative-base=",
            false,
        ),
        (
            "rg",
            "-e= -f= -i -S -s -v -w -x -F -n -N -H -I -l -c -o -q -r= -A= -B= -C= -m= -g= -t= -T= -L -d= -U \
             -P -a -0 -j= -p -b -E= -M= -u --regexp= --file= --ignore-case --smart-case --case-sensitive \
             --invert-match --word-regexp --line-regexp --fixed-strings --line-number --no-line-number \
             --with-filename --no-filename --files-with-matches --files-without-match --count \
             --count-matches --only-matching --quiet --replace= --after-context= --before-context= \
             --context= --max-count= --glob= --iglob= --type= --type-not= --type-add= --type-clear= \
             --type-list --hidden --no-hidden --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-parent \
             --no-ignore-global --no-ignore-exclude --no-ignore-files --ignore-file= --follow \
             --no-follow --max-depth= --max-filesize= --multiline --multiline-dotall --pcre2 --json \
             --color= --colors= --heading --no-heading --column --no-column --files --sort= --sortr= --trim \
             --text --null --null-data --vimgrep --stats --threads= --passthru --pretty --byte-offset \
             --engine= --no-config --no-messages --one-file-system --glob-case-insensitive --encoding= \
             --crlf --no-unicode --block-buffered --line-buffered --max-columns= --max-columns-preview \
             --include-zero --debug --trace --mmap --no-mmap --binary --no-binary --dfa-size-limit= \
             --regex-size-limit= --unrestricted --context-separator= --no-context-separator \
             --field-match-separator= --field-context-separator= --path-separator= --auto-hybrid-regex \
             --no-pcre2-unicode --ignore-file-case-insensitive --no-require-git --files-with-matches",
            false,
        ),
        ("seq", "-f= -s= -w --format= --separator= --equal-width", true),
        ("sha1sum", SUMS, false),
        ("sha256sum", SUMS, false),
        ("sha512sum", SUMS, false),
        (
            "sort",
            "-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z -k= -t= -S= --parallel= \
             --ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort \
             --ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort --random-sort \
             --random-source= --reverse --version-sort --sort= --check=? --merge --stable --unique \
             --zero-terminated --key= --field-separator= --buffer-size= --debug --files0-from=",
            false,
        ),
        ("stat", "-L -f -t -c= --format= --printf= --dereference --file-system --terse --cached=", false),
        (
            "tail",
            "-c= -n= -f -F -q -v -z -s= --bytes= --lines= --follow=? --retry --pid= --sleep-interval= \
             --max-unchanged-stats= --quiet --silent --verbose --zero-terminated",
            true,
        ),
        ("tr", "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1", false),
        (
            "tree",
            "-a -d -l -f -x -L= -P= -I= -i -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -n -C -X -J -S -A \
             --gitignore --ignore-case --matchdirs --metafirst --prune --info --noreport --charset= \
             --filelimit= --si --du --timefmt= --inodes --device --dirsfirst --filesfirst --sort= --nolinks",
            false,
        ),
        (
            "uname",
            "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version \
             --machine --processor --hardware-platform --operating-system",
            false,
        ),
        (
            "wc",
            "-c -m -l -L -w --bytes --chars --lines --max-line-length --words --files0-from= --total=",
            false,
        ),
        ("which", "-a -s", false),
        ("whoami", "", false),
    ];
    specs.iter().map(|&(name, text, digits)| (name, Spec::new(text, digits))).collect()
});

const DIFF: &str = "-p -u -s --patch --no-patch -U= --unified= --output-indicator-new= \
    --output-indicator-old= --output-indicator-context= --raw --patch-with-raw -t --indent-heuristic \
    --no-indent-heuristic --minimal --patience --histogram --anchored= --diff-algorithm= --stat=? \
    --compact-summary --numstat --shortstat -X=? --dirstat=? --cumulative --dirstat-by-file=? --summary \
    --patch-with-stat -z --name-only --name-status --submodule=? --color=? --no-color --color-moved=? \
    --no-color-moved --color-moved-ws= --no-color-moved-ws --word-diff=? --word-diff-regex= \
    --color-words=? --no-renames --rename-empty --no-rename-empty --check --ws-error-highlight= \
    --full-index --binary --abbrev=? --no-abbrev -B=? --break-rewrites=? -M=? --find-renames=? -C=? \
    --find-copies=? --find-copies-harder -D --irreversible-delete -l= --diff-filter= -S= -G= \
    --find-object= --pickaxe-all --pickaxe-regex -R --relative=? --no-relative -a --text \
    --ignore-cr-at-eol --ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space \
    --ignore-blank-lines -I= --ignore-matching-lines= --inter-hunk-context= -W --function-context \
    --exit-code --quiet --no-ext-diff --textconv --no-textconv --ignore-submodules=? --src-prefix= \
    --dst-prefix= --no-prefix --default-prefix --line-prefix= --ita-invisible-in-index \
    --ita-visible-in-index --stat-width= --stat-name-width= --stat-count= --stat-graph-width=";

const DIFF_ONLY: &str = "--cached --staged --merge-base --no-index -1 -2 -3 -0 --base --ours --theirs";

const LOG: &str = "--follow --no-follow --no-decorate --decorate=? --decorate-refs= --decorate-refs-exclude= \
    --clear-decorations --source --mailmap --no-mailmap --use-mailmap --no-use-mailmap --full-diff \
    --log-size -L= -n= --max-count= --skip= --since= --after= --until= --before= --since-as-filter= \
    --author= --committer= --grep-reflog= --grep= --all-match --invert-grep -i --regexp-ignore-case \
    --basic-regexp -E --extended-regexp -F --fixed-strings -P --perl-regexp --remove-empty --merges \
    --no-merges --min-parents= --max-parents= --no-min-parents --no-max-parents --first-parent \
    --exclude-first-parent-only --not --all --branches=? --tags=? --remotes=? --glob= --exclude= --reflog \
    --alternate-refs --single-worktree --ignore-missing --cherry-mark --cherry-pick --left-only \
    --right-only --cherry -g --walk-reflogs --merge --boundary --simplify-by-decoration --show-pulls \
    --full-history --dense --sparse --simplify-merges --ancestry-path=? --date-order \
    --author-date-order --topo-order --reverse --no-walk=? --do-walk --pretty=? --format= --abbrev-commit \
    --no-abbrev-commit --oneline --encoding= --expand-tabs=? --no-expand-tabs --notes=? --no-notes \
    --show-notes=? --standard-notes --no-standard-notes --relative-date --date= --parents --children \
    --left-right --graph --show-linear-break=? -c --cc --dd --remerge-diff --no-diff-merges \
    --diff-merges= -m -r";

/// The options of each read-only git subcommand (`branch`, `tag`, `config`, `remote` and
/// `stash` are checked further in [`git`]).
static GIT: LazyLock<HashMap<&'static str, Spec>> = LazyLock::new(|| {
    let leak = |parts: &[&str]| -> &'static str { Box::leak(parts.join(" ").into_boxed_str()) };
    let specs: Vec<(&str, &'static str, bool)> = vec![
        (
            "blame",
            "-b --root --show-stats -L= -l -t -S= --reverse= --first-parent -p --porcelain --line-porcelain \
             --incremental --encoding= --contents= --date= --progress --no-progress -M=? -C=? --ignore-rev= \
             --ignore-revs-file= --color-lines --color-by-age -c --score-debug -f --show-name -n \
             --show-number -s -e --show-email -w --abbrev=?",
            false,
        ),
        (
            "branch",
            "-a --all -r --remotes -v --verbose -l --list --show-current --no-color --color=? --merged=? \
             --no-merged=? --contains=? --no-contains=? --points-at= --sort= --format= --column=? \
             --no-column -i --ignore-case --abbrev=? --no-abbrev --omit-empty",
            false,
        ),
        (
            "cat-file",
            "-t -s -e -p --textconv --filters --path= --batch=? --batch-check=? --batch-command=? \
             --batch-all-objects --buffer --unordered --follow-symlinks -z -Z --allow-unknown-type \
             --use-mailmap --no-use-mailmap --mailmap --no-mailmap",
            false,
        ),
        (
            "config",
            "--get --get-all --get-regexp --get-urlmatch --list -l --global --system --local --worktree \
             --show-origin --show-scope -z --null --name-only --type= --bool --int --bool-or-int --path \
             --expiry-date --default= --includes --no-includes --all --regexp --value= --fixed-value \
             --url= --show-names",
            false,
        ),
        (
            "describe",
            "--dirty=? --broken=? --all --tags --contains --abbrev=? --candidates= --exact-match --debug \
             --long --match= --exclude= --always --first-parent",
            false,
        ),
        ("diff", leak(&[DIFF, DIFF_ONLY]), true),
        (
            "grep",
            "--cached --no-index --untracked --no-exclude-standard --exclude-standard --recurse-submodules \
             -a --text --textconv --no-textconv -i --ignore-case -I --max-depth= -r --recursive \
             --no-recursive -w --word-regexp -v --invert-match -h -H --full-name -E --extended-regexp -G \
             --basic-regexp -P --perl-regexp -F --fixed-strings -n --line-number --column -l \
             --files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c \
             --count --color=? --no-color --break --heading -p --show-function -A= -B= -C= \
             --after-context= --before-context= --context= -W --function-context -m= --max-count= \
             --threads= -f= -e= --and --or --not --all-match -q --quiet",
            true,
        ),
        ("log", leak(&[DIFF, LOG]), true),
        (
            "ls-files",
            "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage --directory \
             --no-empty-directory -u --unmerged -k --killed -z -t -v -f --full-name --recurse-submodules \
             --abbrev=? --debug --eol --deduplicate --exclude= -x= --exclude-from= -X= \
             --exclude-per-directory= --exclude-standard --error-unmatch --with-tree= --format= --sparse \
             --resolve-undo",
            false,
        ),
        (
            "ls-tree",
            "-d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree \
             --abbrev=? --format=",
            false,
        ),
        ("remote", "-v --verbose", false),
        (
            "rev-parse",
            "--verify -q --quiet --sq --short=? --not --abbrev-ref=? --symbolic --symbolic-full-name --all \
             --branches=? --tags=? --remotes=? --glob= --exclude= --disambiguate= --local-env-vars \
             --path-format= --git-dir --git-common-dir --resolve-git-dir= --git-path= --show-toplevel \
             --show-superproject-working-tree --shared-index-path --absolute-git-dir --is-inside-git-dir \
             --is-inside-work-tree --is-bare-repository --is-shallow-repository --show-cdup --show-prefix \
             --show-object-format=? --show-ref-format --since= --after= --until= --before= --default= \
             --prefix= --revs-only --no-revs --flags --no-flags --end-of-options",
            false,
        ),
        ("shortlog", leak(&[LOG, "-n --numbered -s --summary -e --email --group= -w=?"]), true),
        ("show", leak(&[DIFF, LOG]), true),
        ("stash", leak(&[DIFF, LOG, "-u --include-untracked --only-untracked"]), true),
        (
            "status",
            "-s --short -b --branch --show-stash --no-show-stash --porcelain=? --long -v --verbose -u=? \
             --untracked-files=? --ignore-submodules=? --ignored=? -z --column=? --no-column \
             --ahead-behind --no-ahead-behind --renames --no-renames --find-renames=?",
            false,
        ),
        (
            "tag",
            "-l --list -n=? --sort= --format= --contains=? --no-contains=? --merged=? --no-merged=? \
             --points-at= --column=? --no-column -i --ignore-case --color=? --omit-empty",
            false,
        ),
    ];
    specs.into_iter().map(|(name, text, digits)| (name, Spec::new(text, digits))).collect()
});

/// git's own options (before the subcommand) that are harmless. `-c`, `--config-env`, `-C`,
/// `--git-dir`, `--work-tree`, `--exec-path`, `--namespace`, `-p`/`--paginate` (the pager is a
/// program) and everything else are not.
static GIT_GLOBAL: LazyLock<Spec> = LazyLock::new(|| {
    Spec::new(
        "-P --no-pager --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs \
         --icase-pathspecs --no-replace-objects --no-advice --version",
        false,
    )
});

/// `Ok` when one simple command (its words, quotes removed) only reads; otherwise why not.
pub(super) fn read_only(words: &[String]) -> Result<(), String> {
    let program = words[0].as_str();
    let args = &words[1..];
    if !READ_ONLY_PROGRAMS.contains(&program) {
        return Err(format!("`{program}` is not a known read-only program"));
    }
    let not_listed = |option: String| {
        format!("`{program} {option}` is not an option known to only read, so it counts as changing things")
    };
    match program {
        // Their arguments are text to print or nothing at all.
        "echo" | "true" | "false" => Ok(()),
        // `printf -v NAME` assigns a shell variable (`PATH`, for the next command).
        "printf" => match args.first() {
            Some(first) if first.starts_with('-') && first != "--" => Err(not_listed(first.clone())),
            _ => Ok(()),
        },
        "find" => find(args).map_err(not_listed),
        "git" => git(args),
        _ => {
            let scanned = scan(&PROGRAMS[program], args, false).map_err(not_listed)?;
            match program {
                // `date MMDDhhmm` sets the clock; a format starts with `+`.
                "date" => match scanned.positionals.iter().find(|p| !p.starts_with('+')) {
                    Some(positional) => {
                        Err(format!("`date {positional}` sets the clock; only `+FORMAT` arguments only read"))
                    }
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        }
    }
}

/// `find`'s expression, checked against the tests and actions that only read (`-exec`,
/// `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint`, `-fprint0`, `-fprintf`, `-fls` and anything
/// unknown are refused). `Err` holds the refused word.
fn find(args: &[String]) -> Result<(), String> {
    const FLAGS: &[&str] = &[
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-nouser",
        "-nogroup",
        "-depth",
        "-d",
        "-xdev",
        "-mount",
        "-follow",
        "-noleaf",
        "-daystart",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-a",
        "-and",
        "-o",
        "-or",
        "-not",
        "-warn",
        "-nowarn",
        "!",
        "(",
        ")",
        ",",
    ];
    const VALUED: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-maxdepth",
        "-mindepth",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-size",
        "-newer",
        "-anewer",
        "-cnewer",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-links",
        "-inum",
        "-samefile",
        "-printf",
        "-regextype",
        "-fstype",
        "-used",
    ];
    let mut words = args.iter().map(String::as_str).peekable();
    // Options before the starting points.
    while let Some(&word) = words.peek() {
        match word {
            "-H" | "-L" | "-P" => {}
            _ if word.starts_with("-O") && word[2..].bytes().all(|b| b.is_ascii_digit()) => {}
            _ => break,
        }
        words.next();
    }
    // Starting points, up to the expression.
    while words.peek().is_some_and(|w| !w.starts_with('-') && !matches!(*w, "!" | "(" | ")" | ",")) {
        words.next();
    }
    while let Some(word) = words.next() {
        let newer_xy = word.len() == 8 && word.starts_with("-newer");
        if VALUED.contains(&word) || newer_xy {
            if words.next().is_none() {
                return Err(word.to_owned());
            }
        } else if !FLAGS.contains(&word) {
            // An unknown action, or a word where `find` expects one.
            return Err(word.to_owned());
        }
    }
    Ok(())
}

fn git(args: &[String]) -> Result<(), String> {
    let global = scan(&GIT_GLOBAL, args, true)
        .map_err(|option| format!("`git {option}` (a global option) is not one known to only read"))?;
    let Some((subcommand, rest)) = global.positionals.split_first() else { return Ok(()) };
    let Some(spec) = GIT.get(subcommand) else {
        return Err(format!("`git {subcommand}` is not a known read-only git command"));
    };
    let rest: Vec<String> = rest.iter().map(|s| (*s).to_owned()).collect();
    let refused = |what: &str| {
        Err(format!("`git {subcommand} {what}` may change the repository or run other programs"))
    };
    let scanned = match scan(spec, &rest, false) {
        Ok(scanned) => scanned,
        Err(option) => {
            return Err(format!(
                "`git {subcommand} {option}` is not an option known to only read, so it counts as changing things"
            ));
        }
    };
    let listing = |options: &[&str], scanned: &Scanned<'_>| options.iter().any(|o| scanned.has(o));
    match *subcommand {
        "branch" => {
            const LISTS: &[&str] =
                &["-l", "--list", "--merged", "--no-merged", "--contains", "--no-contains", "--points-at"];
            if let Some(name) = scanned.positionals.first().filter(|_| !listing(LISTS, &scanned)) {
                return refused(name);
            }
        }
        "tag" => {
            const LISTS: &[&str] =
                &["-l", "--list", "--merged", "--no-merged", "--contains", "--no-contains", "--points-at"];
            if let Some(name) = scanned.positionals.first().filter(|_| !listing(LISTS, &scanned)) {
                return refused(name);
            }
        }
        "remote" => match scanned.positionals.as_slice() {
            [] | ["get-url", _] => {}
            [first, ..] => return refused(first),
        },
        "config" => {
            const GETS: &[&str] = &["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"];
            let reads = listing(GETS, &scanned)
                || matches!(scanned.positionals.first(), Some(&("get" | "list")))
                || scanned.positionals.len() <= 1;
            let writes = ["--all", "--regexp", "--value", "--fixed-value", "--url", "--show-names"]
                .iter()
                .any(|o| scanned.has(o))
                && !matches!(scanned.positionals.first(), Some(&"get"));
            if !reads || writes {
                return refused(&rest.join(" "));
            }
        }
        "stash" => match scanned.positionals.first() {
            Some(&("list" | "show")) => {}
            other => return refused(other.copied().unwrap_or("")),
        },
        _ => {}
    }
    Ok(())
}
