"""English normalization corpus: written text -> what the voice should say."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.normalize import normalize_text

CASES: list[tuple[str, str]] = [
    # The headline trap.
    (
        "Dr. Smith paid $3.50 on 1/2/2024 at 10:30am.",
        "Doctor Smith paid three dollars and fifty cents on January second, twenty twenty-four at ten thirty a-m.",
    ),
    # Cardinals, decimals, negatives.
    ("0", "zero"),
    ("7 days", "seven days"),
    ("42", "forty-two"),
    ("101 dalmatians", "one hundred one dalmatians"),
    ("1,234,567", "one million two hundred thirty-four thousand five hundred sixty-seven"),
    ("3.14", "three point one four"),
    ("0.5", "zero point five"),
    (".5", "point five"),
    ("-5", "minus five"),
    ("−12 degrees", "minus twelve degrees"),
    ("It is -3.5 outside", "It is minus three point five outside"),
    ("007", "zero zero seven"),
    ("1000000", "one million"),
    (
        "12345678901234567890",
        " ".join(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "zero"] * 2),
    ),
    ("pages 3 and 4", "pages three and four"),
    ("x-5", "x-five"),
    ("COVID19 and mp3", "COVID19 and mp3"),
    ("4K video", "4K video"),
    # Years and decades.
    ("in 1999", "in nineteen ninety-nine"),
    ("in 2024", "in twenty twenty-four"),
    ("in 2005", "in two thousand five"),
    ("in 1905", "in nineteen oh-five"),
    ("the 1990s", "the nineteen nineties"),
    ("the 2000s", "the two thousands"),
    ("the '80s", "the eighties"),
    ("the ’60s", "the sixties"),
    ("1990-1995", "nineteen ninety to nineteen ninety-five"),
    # Ordinals.
    ("1st", "first"),
    ("2nd place", "second place"),
    ("3rd", "third"),
    ("21st century", "twenty-first century"),
    ("111th", "one hundred eleventh"),
    ("4TH", "fourth"),
    # Money.
    ("$3.50", "three dollars and fifty cents"),
    ("$1", "one dollar"),
    ("$1.01", "one dollar and one cent"),
    ("$0.99", "ninety-nine cents"),
    ("$3.5", "three dollars and fifty cents"),
    ("$1,000", "one thousand dollars"),
    ("$5m", "five million dollars"),
    ("$2.5 billion", "two point five billion dollars"),
    ("$3bn", "three billion dollars"),
    ("$10k", "ten thousand dollars"),
    ("-$5", "minus five dollars"),
    ("$3.456", "three point four five six dollars"),
    ("€20", "twenty euros"),
    ("20€", "twenty euros"),
    ("£5.20", "five pounds and twenty pence"),
    ("£1", "one pound"),
    ("¥100", "one hundred yen"),
    ("₹50", "fifty rupees"),
    ("5 USD", "five dollars"),
    ("EUR 10", "ten euros"),
    ("US$5", "five dollars"),
    ("99¢", "ninety-nine cents"),
    ("1¢", "one cent"),
    # Percentages.
    ("50%", "fifty percent"),
    ("3.5%", "three point five percent"),
    ("-2%", "minus two percent"),
    ("100 %", "one hundred percent"),
    ("5-10%", "five to ten percent"),
    # Dates.
    ("1/2/2024", "January second, twenty twenty-four"),
    ("13/2/2024", "February thirteenth, twenty twenty-four"),
    ("12/25/99", "December twenty-fifth, ninety-nine"),
    ("1/2/05", "January second, oh five"),
    ("2024-01-02", "January second, twenty twenty-four"),
    ("02.01.2024", "the second of January, twenty twenty-four"),
    ("January 2nd, 2024", "January second, twenty twenty-four"),
    ("Jan 2 2024", "January second, twenty twenty-four"),
    ("Sept. 11", "September eleventh"),
    ("March 15", "March fifteenth"),
    ("2 January 2024", "the second of January, twenty twenty-four"),
    ("the 4th of July", "the fourth of July"),
    ("May 2024", "May twenty twenty-four"),
    ("13/13/2024", "thirteen slash thirteen slash twenty twenty-four"),
    # Times.
    ("10:30am", "ten thirty a-m"),
    ("10:30 AM", "ten thirty a-m"),
    ("10:30 p.m.", "ten thirty p-m."),
    ("at 10 p.m. Smith left", "at ten p-m Smith left"),
    ("10:05", "ten oh five"),
    ("10:00", "ten o'clock"),
    ("10:00 pm", "ten p-m"),
    ("14:30", "fourteen thirty"),
    ("14:30:15", "fourteen thirty and fifteen seconds"),
    ("5pm", "five p-m"),
    ("5 a.m. Then", "five a-m. Then"),
    ("11 PM", "eleven p-m"),
    ("I have 5 amps", "I have five amps"),
    # Fractions and ranges.
    ("1/2", "one half"),
    ("3/4 cup", "three quarters cup"),
    ("2/3", "two thirds"),
    ("5/8", "five eighths"),
    ("1/10", "one tenth"),
    ("10/20", "ten slash twenty"),
    ("24/7", "twenty-four seven"),
    ("50/50", "fifty-fifty"),
    ("½", "one half"),
    ("1½ hours", "one and a half hours"),
    ("2¾", "two and three quarters"),
    ("10-20 people", "ten to twenty people"),
    ("pages 10–20", "pages ten to twenty"),
    ("5-10 km", "five to ten kilometers"),
    # Units.
    ("5 km", "five kilometers"),
    ("1 km", "one kilometer"),
    ("10kg", "ten kilograms"),
    ("2.5 kg", "two point five kilograms"),
    ("100°C", "one hundred degrees Celsius"),
    ("-5°F", "minus five degrees Fahrenheit"),
    ("90°", "ninety degrees"),
    ("60 mph", "sixty miles per hour"),
    ("100 km/h", "one hundred kilometers per hour"),
    ("16 GB", "sixteen gigabytes"),
    ("5 min", "five minutes"),
    ("1 h", "one hour"),
    ("200 ml", "two hundred milliliters"),
    ("3 ft", "three feet"),
    ("1 ft", "one foot"),
    ("50 m²", "fifty square meters"),
    ("2.4 GHz", "two point four gigahertz"),
    ("100 W", "one hundred watts"),
    # Phone numbers.
    ("(555) 123-4567", "five five five, one two three, four five six seven"),
    ("555-123-4567", "five five five, one two three, four five six seven"),
    ("+1 555 123 4567", "plus one, five five five, one two three, four five six seven"),
    ("+44 20 7946 0958", "plus four four, two zero, seven nine four six, zero nine five eight"),
    ("555-1234", "five five five, one two three four"),
    # Addresses on the web.
    ("https://www.example.com/path?x=1", "W W W dot example dot com slash path question mark x equals one"),
    ("http://example.org", "example dot org"),
    ("Visit example.com today", "Visit example dot com today"),
    ("Visit example.com.", "Visit example dot com."),
    ("docs.python.org/3/", "docs dot python dot org slash three slash"),
    ("john.doe@example.com", "john dot doe at example dot com"),
    ("Mail me_2@mail.co.uk!", "Mail me underscore two at mail dot co dot uk!"),
    ("Node.js is not a domain", "Node.js is not a domain"),
    # Abbreviations.
    ("Mr. Jones", "Mister Jones"),
    ("Mrs. Jones", "Missus Jones"),
    ("Ms. Jones", "Miz Jones"),
    ("Prof. Xavier", "Professor Xavier"),
    ("Ask Dr. Smith", "Ask Doctor Smith"),
    ("Elm Dr. is closed", "Elm Drive is closed"),
    ("St. Louis", "Saint Louis"),
    ("Visit 42 Main St. today", "Visit forty-two Main Street today"),
    ("Main St. Then left", "Main Street. Then left"),
    ("apples, pears, etc.", "apples, pears, et cetera."),
    ("apples, etc. and pears", "apples, et cetera and pears"),
    ("e.g. this", "for example this"),
    ("i.e. that", "that is that"),
    ("Apple Inc.", "Apple Incorporated."),
    ("Smith Jr. arrived", "Smith Junior arrived"),
    ("Lakers vs. Celtics", "Lakers versus Celtics"),
    ("Lakers vs Celtics", "Lakers versus Celtics"),
    ("approx. 5", "approximately five"),
    ("No. 5", "number five"),
    ("no. 7", "number seven"),
    ("No. I will not", "No. I will not"),
    ("coffee w/ milk", "coffee with milk"),
    ("coffee w/o milk", "coffee without milk"),
    ("see Fig. 3", "see Figure three"),
    # Dotted acronyms and initials.
    ("U.S.A.", "U-S-eh."),
    ("the U.S.A. is big", "the U-S-eh is big"),
    ("the U.S. Army", "the U-S Army"),
    ("J. R. R. Tolkien", "J R R Tolkien"),
    ("USA", "USA"),
    # Roman numerals.
    ("Chapter IV", "Chapter four"),
    ("Part I", "Part one"),
    ("World War II", "World War two"),
    ("Henry VIII", "Henry the eighth"),
    ("Louis XIV", "Louis the fourteenth"),
    ("Rocky II", "Rocky two"),
    ("Washington DC", "Washington DC"),
    ("I am here", "I am here"),
    # Symbols, markup and emoji.
    ("AT&T", "AT and T"),
    ("R&D", "R and D"),
    ("#1 fan", "number one fan"),
    ("#python rocks", "hashtag python rocks"),
    ("~5 minutes", "about five minutes"),
    ("**bold** text", " bold text"),
    ("Acme™", "Acme"),
    ("§ 5", " section five"),
    ("I ❤️ NY", "I NY"),
    ("Great job 👍🏽!", "Great job !"),
    ("Keycap 1️⃣", "Keycap one"),
    ("Flags 🇺🇸 too", "Flags too"),
    ("192.168.0.1", "one hundred ninety-two dot one hundred sixty-eight dot zero dot one"),
    ("v1.2.3", "v1.2.3"),
    # Text that must come through untouched.
    ("Hello, world!", "Hello, world!"),
    ("It's 'quoted'.", "It's 'quoted'."),
    ("x [[ ˈhɛ.loʊ 5 ]] y", "x [[ ˈhɛ.loʊ 5 ]] y"),
    ("你好 world", "你好 world"),
    ("", ""),
]


@pytest.mark.parametrize(("text", "spoken"), CASES, ids=[f"{i:03d}" for i in range(len(CASES))])
def test_it_normalizes_english(text: str, spoken: str) -> None:
    assert normalize_text(text, language="en") == spoken


def test_it_has_a_large_corpus() -> None:
    assert len(CASES) >= 150


@pytest.mark.parametrize("text", ["$3.50 on 1/2/2024", "Dr. Smith", "50%", "😀"])
def test_it_leaves_text_alone_when_off(text: str) -> None:
    assert normalize_text(text, language="en", mode="off") == text


def test_it_accepts_region_subtags() -> None:
    assert normalize_text("5 km", language="en-GB") == "five kilometers"


def test_it_leaves_languages_without_rules_alone_in_auto() -> None:
    assert normalize_text("Ich habe 42 Äpfel", language="de") == "Ich habe 42 Äpfel"


def test_it_spells_whole_numbers_with_num2words_when_on() -> None:
    assert normalize_text("Ich habe 42 Äpfel", language="de", mode="on") == "Ich habe zweiundvierzig Äpfel"
    # A separator is ambiguous across languages ("1.000" is a thousand in German): left alone.
    assert normalize_text("1.000 Euro", language="de", mode="on") == "1.000 Euro"


def test_it_survives_languages_num2words_does_not_know() -> None:
    assert normalize_text("42", language="xx", mode="on") == "42"


def test_it_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError):
        normalize_text("42", mode="sometimes")  # type: ignore[arg-type]
