//! The Skills extension (SEP-2640) against the demo server's skills, in both eras: listing and
//! getting entries, loading a skill and reading its files, and each verification failure
//! refused with an `invalid_response` that says what did not match.

use crate::common::*;
use crate::in_both_eras;
use mcp_supervisor::skills::{self, Skill, SkillResources};
use mcp_supervisor::*;

async fn listed() -> (actix::Addr<Supervisor>, Vec<Skill>, tempfile::TempDir) {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let st = status(&sup, "demo").await;
    assert!(skills::declared(st.capabilities.as_ref().unwrap()));
    let page = sup.send(ListSkills::new("demo")).await.unwrap().unwrap();
    assert_eq!(page.next_cursor, None);
    (sup, page.skills, dir)
}

fn named<'a>(skills: &'a [Skill], name: &str) -> &'a Skill {
    skills.iter().find(|s| s.name() == name).unwrap()
}

async fn skills_are_listed_got_loaded_and_their_files_read() {
    let (sup, skills, _dir) = listed().await;
    assert_eq!(skills.len(), 5);
    let demo = named(&skills, "demo-skill");
    assert_eq!(demo.uri, "skill://demo-skill/SKILL.md");
    assert_eq!(demo.frontmatter["metadata"]["audience"][1], "docs");

    let got = sup
        .send(GetSkill::new("demo", &demo.uri))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got.skill, demo);
    let unknown = sup
        .send(GetSkill::new("demo", "skill://nope/SKILL.md"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::Rpc);
    // An answer with the entry of another skill than the one asked for is refused.
    let substituted = sup
        .send(GetSkill::new("demo", "skill://substituted/SKILL.md"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(substituted.kind(), ErrorKind::InvalidResponse);
    assert!(
        substituted
            .to_string()
            .contains("the server answered with the entry of skill://demo-skill/SKILL.md"),
        "{substituted}"
    );

    let loaded = sup
        .send(LoadSkill::new("demo", demo.clone()))
        .await
        .unwrap()
        .unwrap();
    assert!(loaded.body().contains("Call `echo`, then `add`."));
    let notes = "skill://demo-skill/references/NOTES.md";
    let file = sup
        .send(ReadSkillFile::new("demo", loaded.skill.clone(), notes))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(file.text(), Some("Notes: `add` takes two numbers.\n"));

    // A file the held entry does not list is refused, and not read.
    let unlisted = sup
        .send(ReadSkillFile::new(
            "demo",
            loaded.skill,
            "skill://demo-skill/secrets.md",
        ))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(unlisted.kind(), ErrorKind::InvalidResponse);
    assert!(
        unlisted
            .to_string()
            .contains("not a file of the skill's manifest"),
        "{unlisted}"
    );
    sup.send(Shutdown).await.unwrap();
}

/// SEP-2640: `skills/list` and `skills/get` results carry `resultType: "complete"`, `ttlMs`
/// and `cacheScope`, in either era.
async fn skills_results_carry_the_members_the_extension_requires() {
    let (sup, _skills, _dir) = listed().await;
    for (method, params) in [
        ("skills/list", None),
        (
            "skills/get",
            Some(serde_json::json!({"uri": "skill://demo-skill/SKILL.md"})),
        ),
    ] {
        let result = sup
            .send(Call::new("demo", method, params))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert!(result["ttlMs"].is_u64(), "{method}: {result}");
        assert!(result["cacheScope"].is_string(), "{method}: {result}");
    }
    sup.send(Shutdown).await.unwrap();
}

async fn a_skill_md_that_fails_verification_is_refused() {
    let (sup, skills, _dir) = listed().await;
    for (name, why) in [
        ("digest-mismatch", "has the digest"),
        ("size-mismatch", "but the manifest says"),
        (
            "frontmatter-mismatch",
            "frontmatter's \"description\" is not the entry's",
        ),
    ] {
        let e = sup
            .send(LoadSkill::new("demo", named(&skills, name).clone()))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidResponse, "{name}: {e}");
        let shown = e.to_string();
        assert!(
            shown.contains("skill verification failed") && shown.contains(why),
            "{name}: {shown}"
        );
    }
    sup.send(Shutdown).await.unwrap();
}

async fn an_oversized_skill_is_refused_before_anything_is_read() {
    let (sup, skills, _dir) = listed().await;
    let oversized = named(&skills, "oversized");
    let SkillResources::Files(files) = &oversized.resources else {
        panic!("the oversized skill lists its files")
    };
    assert!(files.iter().map(|f| f.size).sum::<u64>() > skills::MAX_TOTAL_SIZE);
    let e = sup
        .send(LoadSkill::new("demo", oversized.clone()))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidResponse);
    let shown = e.to_string();
    assert!(
        shown.contains("skill entry") && shown.contains("over the limits"),
        "{shown}"
    );
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(
    skills_are_listed_got_loaded_and_their_files_read,
    skills_results_carry_the_members_the_extension_requires,
    a_skill_md_that_fails_verification_is_refused,
    an_oversized_skill_is_refused_before_anything_is_read,
);
