"""Paraphrase pairs for bench/fit_relevance.py: short notes and a question asking for each in other words.

LoCoMo questions share words (and always a speaker's name) with their evidence; an agent's
own notes are often asked for in other words and with no name. Each pair is a note and a
query with little word overlap; fit_relevance.py builds a tree of the notes and labels the
note of each query relevant and the other notes not. None of these is a test's data.
"""
PAIRS = [
    ("Our staging cluster runs on three Hetzner machines in Falkenstein.", "where are the test servers hosted?"),
    ("The quarterly report is due to finance on the fifth working day of each quarter.", "deadline for the accounts summary"),
    ("I am allergic to penicillin; amoxicillin gave me hives in 2019.", "which antibiotics should I avoid?"),
    ("My bike is a steel Surly Cross-Check with a 2x9 drivetrain.", "what kind of bicycle do I ride?"),
    ("The office wifi password rotates on the first Monday of every month.", "when does the wireless key change?"),
    ("We use pnpm rather than npm for the frontend packages.", "which JavaScript package manager do we prefer?"),
    ("Dad's birthday is on 14 March; he likes single malt whisky.", "gift idea for my father's special day"),
    ("The car insurance renews in October with the same broker as last year.", "when is the vehicle policy up for renewal?"),
    ("Invoices above 5,000 euros need a second sign-off from the CFO.", "approval rule for large bills"),
    ("I prefer window seats on long-haul flights and always book an aisle for short hops.", "seating preference when flying"),
    ("The API rate limit is 600 requests per minute per token.", "how many calls can a client make?"),
    ("Grandma's lemon cake recipe uses buttermilk and a lot of zest.", "how to bake nana's citrus sponge"),
    ("The team stand-up moved to 9:45 because of the school run.", "what time is the daily sync now?"),
    ("Logs are kept for 30 days in Loki, then deleted.", "how long do we retain application output?"),
    ("My running shoes are Hoka Clifton 9, size 44.", "what trainers do I jog in?"),
    ("The landlord must be given two months' notice before we move out.", "notice period for leaving the flat"),
    ("Design reviews happen on Thursdays; bring mock-ups as Figma links.", "when do we look at UI proposals together?"),
    ("We deploy with blue-green releases so a rollback is a switch of the router.", "how do we undo a bad release?"),
    ("My blood type is O negative.", "what is my blood group?"),
    ("The cat's vet is at the clinic on Elm Road; vaccinations due every spring.", "where does the pet get its shots?"),
    ("Tax returns are filed by the accountant, Mrs Okafor, every April.", "who handles my yearly filing?"),
    ("We store secrets in Vault and never in environment files.", "where should credentials live?"),
    ("I can't eat gluten, so I order rice dishes when we eat out.", "dietary restriction to remember at restaurants"),
    ("The backup drive is the grey Samsung T7 in the top desk drawer.", "where is the external disk for copies?"),
    ("The garden hose leaks at the tap connector; a new washer is needed.", "what is wrong with the watering pipe?"),
    ("Our customer churn was 3.1% last quarter, down from 4%.", "how many clients did we lose recently?"),
    ("Pull requests are squashed when merged so history stays linear.", "how are branch changes combined?"),
    ("The kids' swimming lessons are on Saturday mornings at the leisure centre.", "weekend activity for the children"),
    ("I keep my passport in the fireproof box under the bed.", "where are my travel documents stored?"),
    ("The printer on the second floor jams unless you use 80 gsm paper.", "why does the copier keep failing?"),
    ("Maria from legal reviews every contract over one year long.", "who checks long agreements?"),
    ("The heating boiler is serviced each September by the same plumber.", "annual maintenance of the furnace"),
    ("Our mobile app supports Android 10 and newer only.", "minimum phone operating system we support"),
    ("I take my coffee with oat milk and no sugar.", "how do I like my morning drink?"),
    ("Meeting rooms are booked through the calendar, not the shared spreadsheet.", "how to reserve a space for a call"),
    ("The database migrations run automatically in the release pipeline.", "who applies schema changes?"),
    ("My left knee hurts after more than ten kilometres, so I keep runs short.", "injury that limits my jogging distance"),
    ("The spare house key is with the neighbour at number 12.", "who has an extra door key?"),
    ("We chose Grafana for dashboards because the team already knew it.", "which monitoring charts tool did we pick?"),
    ("Parents visit for Christmas every other year, next time in 2026.", "when are my mum and dad coming for the holidays?"),
]


if __name__ == "__main__":
    import argparse
    import json

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + " Prints them as JSON lines.").parse_args()
    for note, query in PAIRS:
        print(json.dumps({"note": note, "query": query}, ensure_ascii=False))
