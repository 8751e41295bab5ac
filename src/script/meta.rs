//! The meta-commands: what follows a backslash outside SQL quotes, read as
//! pgbench reads it (the command word, then whitespace-separated words or an
//! expression) and turned into [`ScriptCommand`]s.

use super::builder::ScriptBuilder;
use super::parser::{ExprError, parse_expression};
use super::{ResultTarget, ScriptCommand, ScriptError, ShellWord, SleepAmount};

const MICROSECONDS_PER_MILLISECOND: u64 = 1_000;
const MICROSECONDS_PER_SECOND: u64 = 1_000_000;

/// The meta-commands, for error messages.
const META_COMMANDS: &str = "\\set, \\sleep, \\if, \\elif, \\else, \\endif, \\gset, \\aset, \
     \\shell, \\setshell, \\startpipeline, \\syncpipeline, \\endpipeline";

/// Where a meta-command is: its line, and the column of its backslash.
#[derive(Debug, Clone, Copy)]
pub(super) struct MetaCommandPlace {
    pub line: usize,
    pub column: usize,
}

/// Whether `name` is a variable name: a letter, `_` or non-ASCII character,
/// then those or digits.
pub(super) fn is_valid_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_' || first >= 0x80);
    first_ok && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80)
}

/// The words of a word-based meta-command, without a trailing `--` comment.
fn words_without_comment(arguments: &str) -> Vec<&str> {
    arguments
        .split_whitespace()
        .take_while(|word| !word.starts_with("--"))
        .collect()
}

impl ScriptBuilder {
    /// Handles a meta-command; `text` is what follows the backslash.
    pub(super) fn meta_command(
        &mut self,
        text: &str,
        place: MetaCommandPlace,
    ) -> Result<(), ScriptError> {
        let leading = text.len() - text.trim_start().len();
        let trimmed = text.trim_start();
        let word_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let word = &trimmed[..word_end];
        let arguments_offset = leading + word_end;
        let arguments = &text[arguments_offset..];
        let line = place.line;
        match word.to_ascii_lowercase().as_str() {
            "set" => self.set_command(arguments, arguments_offset, place),
            "if" => {
                let expr = self.expression("if", arguments, arguments_offset, place)?;
                self.open_if(line);
                self.commands.push(ScriptCommand::If {
                    expr,
                    next_branch: 0,
                    line,
                });
                Ok(())
            }
            "elif" => {
                self.add_branch(false, line)?;
                let expr = self.expression("elif", arguments, arguments_offset, place)?;
                self.commands.push(ScriptCommand::Elif {
                    expr,
                    next_branch: 0,
                    end: 0,
                    line,
                });
                Ok(())
            }
            "else" => {
                self.no_arguments("else", arguments, line)?;
                self.add_branch(true, line)?;
                self.commands.push(ScriptCommand::Else { end: 0, line });
                Ok(())
            }
            "endif" => {
                self.no_arguments("endif", arguments, line)?;
                self.close_if(line)?;
                self.commands.push(ScriptCommand::Endif { line });
                Ok(())
            }
            "sleep" => self.sleep_command(arguments, line),
            "gset" | "aset" => self.result_command(word, arguments, line),
            "shell" | "setshell" => self.shell_command(word, arguments, line),
            "startpipeline" | "syncpipeline" | "endpipeline" => {
                self.no_arguments(word, arguments, line)?;
                self.pipeline_command(word, line)
            }
            "" => Err(self.error(
                line,
                format!("backslash without a meta-command; the meta-commands are {META_COMMANDS}"),
            )),
            "setrandom" => Err(self.error(
                line,
                "invalid command \\setrandom (removed from pgbench); write \\set name \
                 random(lb, ub) instead (or random_exponential, random_gaussian, random_zipfian)",
            )),
            _ => Err(self.error(
                line,
                format!("invalid command \\{word}; the meta-commands are {META_COMMANDS}"),
            )),
        }
    }

    /// Parses the expression `text`, which starts `offset` bytes after the backslash.
    fn expression(
        &mut self,
        command: &str,
        text: &str,
        offset: usize,
        place: MetaCommandPlace,
    ) -> Result<super::Expr, ScriptError> {
        let parsed = parse_expression(text, &mut |name| self.slot_of(name));
        parsed.map_err(
            |ExprError {
                 offset: at,
                 problem,
             }| {
                let column = place.column + 1 + offset + at;
                self.error_at(
                    place.line,
                    Some(column),
                    format!("{problem} in \\{command} expression \"{}\"", text.trim()),
                )
            },
        )
    }

    fn no_arguments(&self, command: &str, arguments: &str, line: usize) -> Result<(), ScriptError> {
        match words_without_comment(arguments).first() {
            None => Ok(()),
            Some(extra) => Err(self.error(
                line,
                format!("\\{command} takes no argument, found \"{extra}\""),
            )),
        }
    }

    fn set_command(
        &mut self,
        arguments: &str,
        offset: usize,
        place: MetaCommandPlace,
    ) -> Result<(), ScriptError> {
        let line = place.line;
        let skipped = arguments.len() - arguments.trim_start().len();
        let rest = arguments.trim_start();
        let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let name = &rest[..name_end];
        if name.is_empty() {
            return Err(self.error(
                line,
                "missing argument in \\set; write \\set name expression, e.g. \\set aid \
                 random(1, 100000 * :scale)",
            ));
        }
        if !is_valid_variable_name(name) {
            let fix = match name.strip_prefix(':') {
                Some(bare) => format!("write \\set {bare} ... without the colon"),
                None => "names are letters, digits and underscores, not starting with a digit"
                    .to_string(),
            };
            return Err(self.error(
                line,
                format!("invalid variable name \"{name}\" in \\set; {fix}"),
            ));
        }
        let expression = &rest[name_end..];
        let expr = self.expression("set", expression, offset + skipped + name_end, place)?;
        let slot = self.slot_of(name);
        self.commands.push(ScriptCommand::Set { slot, expr, line });
        Ok(())
    }

    /// `\sleep n [unit]`, `\sleep nunit` or `\sleep :var [unit]`.
    fn sleep_command(&mut self, arguments: &str, line: usize) -> Result<(), ScriptError> {
        let words = words_without_comment(arguments);
        let usage = "write \\sleep number [us|ms|s], e.g. \\sleep 10 ms or \\sleep :delay us";
        let (amount_text, unit_text) = match words.as_slice() {
            [] => return Err(self.error(line, format!("missing argument in \\sleep; {usage}"))),
            [amount] => split_number_and_unit(amount),
            [amount, unit] => (*amount, Some(*unit)),
            _ => return Err(self.error(line, format!("too many arguments in \\sleep; {usage}"))),
        };
        let unit_us = match unit_text.map(str::to_ascii_lowercase).as_deref() {
            None | Some("s") => MICROSECONDS_PER_SECOND,
            Some("ms") => MICROSECONDS_PER_MILLISECOND,
            Some("us") => 1,
            Some(_) => {
                return Err(self.error(
                    line,
                    format!(
                        "unrecognized time unit \"{}\" in \\sleep, must be us, ms or s",
                        unit_text.unwrap_or_default()
                    ),
                ));
            }
        };
        let duration = match amount_text.strip_prefix(':') {
            Some(name) => SleepAmount::Variable {
                slot: self.slot_of(name),
                name: name.to_string(),
            },
            None => match amount_text.parse::<i64>() {
                Ok(amount) => SleepAmount::Fixed(amount),
                Err(_) => {
                    return Err(self.error(
                        line,
                        format!(
                            "invalid sleep time \"{amount_text}\", must be an integer or \
                             :variable; {usage} (for fractions use a smaller unit)"
                        ),
                    ));
                }
            },
        };
        self.commands.push(ScriptCommand::Sleep {
            duration,
            unit_us,
            line,
        });
        Ok(())
    }

    fn result_command(
        &mut self,
        word: &str,
        arguments: &str,
        line: usize,
    ) -> Result<(), ScriptError> {
        let words = words_without_comment(arguments);
        if words.len() > 1 {
            return Err(self.error(
                line,
                format!("too many arguments in \\{word}; it takes one optional variable prefix"),
            ));
        }
        let target = ResultTarget {
            all_queries: word.eq_ignore_ascii_case("aset"),
            prefix: words
                .first()
                .map_or(String::new(), |prefix| prefix.to_string()),
        };
        self.attach_results(target, line)
    }

    /// `\shell command args...` or `\setshell name command args...`: the
    /// words as pgbench reads them (`:name` a variable, `::x` the text `:x`).
    fn shell_command(
        &mut self,
        word: &str,
        arguments: &str,
        line: usize,
    ) -> Result<(), ScriptError> {
        let mut words = arguments.split_whitespace();
        let assign = match word.eq_ignore_ascii_case("setshell") {
            true => match words.next() {
                Some(name) if is_valid_variable_name(name) => Some(self.slot_of(name)),
                Some(name) => {
                    return Err(self.error(
                        line,
                        format!("invalid variable name \"{name}\" in \\setshell"),
                    ));
                }
                None => None,
            },
            false => None,
        };
        let words: Vec<ShellWord> = words
            .map(|text| match text.strip_prefix(':') {
                Some(rest) if rest.starts_with(':') => ShellWord::Text(rest.to_string()),
                Some(name) => ShellWord::Variable {
                    slot: self.slot_of(name),
                    name: name.to_string(),
                },
                None => ShellWord::Text(text.to_string()),
            })
            .collect();
        if words.is_empty() {
            let usage = match assign.is_some() || word.eq_ignore_ascii_case("setshell") {
                true => {
                    "missing argument in \\setshell; write \\setshell name command [argument ...]"
                }
                false => "missing command in \\shell; write \\shell command [argument ...]",
            };
            return Err(self.error(line, usage));
        }
        self.commands.push(ScriptCommand::Shell {
            assign,
            words,
            line,
        });
        Ok(())
    }

    fn pipeline_command(&mut self, word: &str, line: usize) -> Result<(), ScriptError> {
        let command = match word.to_ascii_lowercase().as_str() {
            "startpipeline" => {
                if let Some(open) = self.open_pipeline {
                    return Err(self.error(
                        line,
                        format!("\\startpipeline: already in pipeline mode (since line {open})"),
                    ));
                }
                self.open_pipeline = Some(line);
                ScriptCommand::StartPipeline { line }
            }
            other => {
                if self.open_pipeline.is_none() {
                    return Err(self.error(
                        line,
                        format!("\\{other}: not in pipeline mode; start one with \\startpipeline"),
                    ));
                }
                if other == "endpipeline" {
                    self.open_pipeline = None;
                    ScriptCommand::EndPipeline { line }
                } else {
                    ScriptCommand::SyncPipeline { line }
                }
            }
        };
        self.commands.push(command);
        Ok(())
    }
}

/// `10ms` as (`10`, `ms`), as pgbench allows; a word without a unit as it is.
fn split_number_and_unit(word: &str) -> (&str, Option<&str>) {
    if word.starts_with(':') {
        return (word, None);
    }
    let sign = usize::from(word.starts_with(['+', '-']));
    let digits_end = word[sign..]
        .find(|character: char| !character.is_ascii_digit())
        .map_or(word.len(), |offset| sign + offset);
    match digits_end > sign && digits_end < word.len() {
        true => (&word[..digits_end], Some(&word[digits_end..])),
        false => (word, None),
    }
}
