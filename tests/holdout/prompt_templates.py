"""Prompt templates for the onboarding assistant (string.Template, format_map and a tiny {{var}} renderer)."""
import re
from datetime import date
from string import Template

from openai import OpenAI

client = OpenAI()

GREETING = Template("You are talking to $first_name from $company.\n")
POLICY = """You are Nova, the onboarding assistant for new employees.
Follow the handbook strictly; if something is not covered, tell the employee whom to ask.
Never share salary information. Answer in the employee's language."""
FOOTER = "Today's date is {today}. Office: {office}."
_VAR = re.compile(r"{{\s*(\w+)\s*}}")


def render(template: str, **values: str) -> str:
    """Minimal Jinja-like renderer: replaces {{ name }} placeholders."""
    return _VAR.sub(lambda m: str(values[m.group(1)]), template)


class SafeDict(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def build_system(first_name: str, company: str, office: str) -> str:
    head = GREETING.substitute(first_name=first_name, company=company)  # known miss: the per-user value reaches the prompt through a helper's parameter (CL104)
    tail = FOOTER.format_map(SafeDict(today=date.today().isoformat(), office=office))  # a date: one prefix a day (no finding)
    return head + POLICY + "\n" + tail


def build_user(question: str, team: str) -> str:
    return render("Team: {{ team }}\nQuestion: {{ question }}", team=team, question=question)


def ask(first_name: str, company: str, office: str, team: str, question: str, history: list[dict]) -> str:
    messages = [{"role": "system", "content": build_system(first_name, company, office)}]
    messages += history
    messages.append({"role": "user", "content": build_user(question, team)})
    resp = client.chat.completions.create(model="gpt-4.1", messages=messages)
    return resp.choices[0].message.content


if __name__ == "__main__":
    convo: list[dict] = []
    while (q := input("you> ").strip()):
        answer = ask("Dana", "Initech", "Berlin", "Payments", q, convo)
        convo += [{"role": "user", "content": build_user(q, "Payments")}, {"role": "assistant", "content": answer}]
        print(answer)
