//! Sqitch: the order is the plan's, not the files'. `sqitch.plan` lists the
//! changes in deploy order (pragmas `%...`, tags `@name`, comments `#`, blank
//! lines between them), and each change's script is `deploy/<change>.sql`.
//! A change reworked later in the plan keeps its earlier script as
//! `deploy/<change>@<tag>.sql`, named by the first tag after that earlier
//! line. Sqitch runs each script through psql as it is, so a script's own
//! `BEGIN` ... `COMMIT` is its transaction and a statement outside one
//! commits alone.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The plan file that marks a Sqitch project's folder.
pub(super) const PLAN: &str = "sqitch.plan";

/// One change of the plan: its name and its deploy script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    pub name: String,
    pub script: PathBuf,
}

/// The changes of the plan `plan_text` of the project folder `dir`, in
/// deploy order; `plan` names the plan file in messages.
pub(super) fn plan_changes(dir: &Path, plan: &Path, plan_text: &str) -> Result<Vec<Change>, Error> {
    let lines: Vec<&str> = plan_text.lines().map(str::trim).collect();
    let mut changes = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(name) = change_name(line) else {
            continue;
        };
        let reworked_later = lines[index + 1..]
            .iter()
            .any(|later| change_name(later) == Some(name));
        let file = match reworked_later {
            false => format!("{name}.sql"),
            true => {
                let tag = lines[index + 1..]
                    .iter()
                    .find_map(|later| later.strip_prefix('@'))
                    .and_then(|tag| tag.split_whitespace().next())
                    .ok_or_else(|| {
                        Error::bad_input(format!(
                            "{}: change {name} is reworked later in the plan, but no tag \
                             follows its first line; sqitch would refuse the plan, so tag it",
                            plan.display()
                        ))
                    })?;
                format!("{name}@{tag}.sql")
            }
        };
        let script = dir.join("deploy").join(file);
        if !script.is_file() {
            return Err(Error::bad_input(format!(
                "{}: change {name} has no deploy script {}; add it, or remove the change \
                 from the plan",
                plan.display(),
                script.display()
            )));
        }
        changes.push(Change {
            name: name.to_string(),
            script,
        });
    }
    Ok(changes)
}

/// The changes a plan's text lists, in order (a reworked change once per
/// line that names it).
pub(super) fn plan_change_names(plan_text: &str) -> Vec<&str> {
    plan_text
        .lines()
        .filter_map(|line| change_name(line.trim()))
        .collect()
}

/// The change a plan line names: its first word, unless the line is blank,
/// a comment, a pragma or a tag.
fn change_name(line: &str) -> Option<&str> {
    match line.chars().next() {
        None | Some('#' | '%' | '@') => None,
        Some(_) => line.split_whitespace().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_come_in_plan_order_and_a_reworked_one_keeps_its_tagged_script() {
        let dir = tempfile::tempdir().unwrap();
        let deploy = dir.path().join("deploy");
        std::fs::create_dir(&deploy).unwrap();
        for file in ["users.sql", "email.sql", "users@v1.0.sql"] {
            std::fs::write(deploy.join(file), "SELECT 1;").unwrap();
        }
        let plan = "%syntax-version=1.0.0\n%project=app\n\n\
            users 2024-01-01T00:00:00Z Ann <ann@example.com> # users\n\
            email [users] 2024-01-02T00:00:00Z Ann <ann@example.com> # email\n\
            @v1.0 2024-01-03T00:00:00Z Ann <ann@example.com> # release\n\n\
            users [users@v1.0] 2024-01-04T00:00:00Z Ann <ann@example.com> # rework\n";
        let plan_path = dir.path().join(PLAN);
        let changes = plan_changes(dir.path(), &plan_path, plan).unwrap();
        let scripts: Vec<&str> = changes
            .iter()
            .map(|change| change.script.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(scripts, ["users@v1.0.sql", "email.sql", "users.sql"]);

        std::fs::remove_file(deploy.join("email.sql")).unwrap();
        let err = plan_changes(dir.path(), &plan_path, plan)
            .unwrap_err()
            .to_string();
        assert!(err.contains("change email has no deploy script"), "{err}");
    }
}
