"""English word tables: abbreviations, units, symbols and letter names.

Data only; ``en`` turns these into patterns. Keys are case-sensitive on
purpose: "Dr." is an abbreviation, "dr." at the end of a sentence rarely is.
"""

from __future__ import annotations

# Written form -> spoken form. A key ending in "." owns its period.
ABBREVIATIONS: dict[str, str] = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Prof.": "Professor",
    "Mt.": "Mount",
    "Ft.": "Fort",
    "Gen.": "General",
    "Col.": "Colonel",
    "Lt.": "Lieutenant",
    "Sgt.": "Sergeant",
    "Capt.": "Captain",
    "Cmdr.": "Commander",
    "Adm.": "Admiral",
    "Rev.": "Reverend",
    "Hon.": "Honorable",
    "Gov.": "Governor",
    "Sen.": "Senator",
    "Rep.": "Representative",
    "Pres.": "President",
    "Fr.": "Father",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "vs.": "versus",
    "vs": "versus",
    "etc.": "et cetera",
    "e.g.": "for example",
    "i.e.": "that is",
    "a.k.a.": "also known as",
    "cf.": "compare",
    "viz.": "namely",
    "approx.": "approximately",
    "esp.": "especially",
    "incl.": "including",
    "et al.": "et al",
    "Inc.": "Incorporated",
    "Ltd.": "Limited",
    "Corp.": "Corporation",
    "Bros.": "Brothers",
    "Dept.": "Department",
    "Univ.": "University",
    "Ave.": "Avenue",
    "Blvd.": "Boulevard",
    "Rd.": "Road",
    "Hwy.": "Highway",
    "Apt.": "Apartment",
    "Fig.": "Figure",
    "fig.": "figure",
    "Vol.": "Volume",
    "vol.": "volume",
    "Ph.D.": "P-H-D",
    "w/o": "without",
    "w/": "with",
}

# Spoken right before a name, so a following capital is not a new sentence.
TITLES = frozenset(
    {
        *("Mr.", "Mrs.", "Ms.", "Prof.", "Mt.", "Ft.", "Gen.", "Col.", "Lt.", "Sgt.", "Capt.", "Cmdr.", "Adm."),
        *("Rev.", "Hon.", "Gov.", "Sen.", "Rep.", "Pres.", "Fr.", "vs.", "e.g.", "i.e.", "cf.", "viz.", "approx."),
    }
)

# "Dr." and "St." read differently before a name ("Doctor", "Saint") and
# after one ("Elm Drive", "Main Street").
PLACE_OR_TITLE = {"Dr.": ("Doctor", "Drive"), "St.": ("Saint", "Street")}

# Words that usually open a sentence: after "Main St." they mean the period
# ended one ("Street. Then"), where a name would mean "St." is "Saint".
# fmt: off
SENTENCE_STARTERS = frozenset([
    "The", "A", "An", "It", "I", "We", "He", "She", "They", "You", "This", "That", "These", "Those", "There",
    "Then", "But", "And", "So", "Or", "If", "When", "While", "After", "Before", "Now", "Today", "Tomorrow",
    "Yesterday", "Please", "Thanks", "Thank", "What", "Why", "How", "Where", "Our", "My", "Your", "His", "Her",
    "Their", "Its", "In", "On", "At", "As", "For", "From", "To", "With", "By", "Of", "Also", "However",
    "Meanwhile", "Finally", "Next"
])
# fmt: on

# "No." only means "number" before a number ("No. 5"); otherwise it is "no".
NUMBER_SIGNS = {"No.": "number", "no.": "number", "Nos.": "numbers", "#": "number", "№": "number"}

# Unit symbol -> (singular, plural). Longest symbols are matched first.
UNITS: dict[str, tuple[str, str]] = {
    "mm": ("millimeter", "millimeters"),
    "cm": ("centimeter", "centimeters"),
    "m": ("meter", "meters"),
    "km": ("kilometer", "kilometers"),
    "m²": ("square meter", "square meters"),
    "km²": ("square kilometer", "square kilometers"),
    "m³": ("cubic meter", "cubic meters"),
    "ft": ("foot", "feet"),
    "mi": ("mile", "miles"),
    "mg": ("milligram", "milligrams"),
    "g": ("gram", "grams"),
    "kg": ("kilogram", "kilograms"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "oz": ("ounce", "ounces"),
    "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"),
    "L": ("liter", "liters"),
    "ms": ("millisecond", "milliseconds"),
    "sec": ("second", "seconds"),
    "secs": ("second", "seconds"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "mph": ("mile per hour", "miles per hour"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "m/s": ("meter per second", "meters per second"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"),
    "KB": ("kilobyte", "kilobytes"),
    "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "Mbps": ("megabit per second", "megabits per second"),
    "Gbps": ("gigabit per second", "gigabits per second"),
    "W": ("watt", "watts"),
    "kW": ("kilowatt", "kilowatts"),
    "MW": ("megawatt", "megawatts"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "V": ("volt", "volts"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "dB": ("decibel", "decibels"),
    "px": ("pixel", "pixels"),
    "°C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("degree", "degrees"),
}

# Symbols espeak-ng reads badly or that are formatting, not words.
SYMBOLS: dict[str, str] = {
    "&": " and ",
    "§": " section ",
    "¶": " paragraph ",
    "©": " copyright ",
    "™": "",
    "®": "",
    "•": " ",
    "‣": " ",
    "▪": " ",
    "‰": " per mille",
}

VULGAR_FRACTIONS: dict[str, tuple[str, str]] = {
    # glyph: (alone, after a whole number)
    "½": ("one half", "and a half"),
    "⅓": ("one third", "and a third"),
    "⅔": ("two thirds", "and two thirds"),
    "¼": ("one quarter", "and a quarter"),
    "¾": ("three quarters", "and three quarters"),
    "⅛": ("one eighth", "and an eighth"),
    "⅜": ("three eighths", "and three eighths"),
    "⅝": ("five eighths", "and five eighths"),
    "⅞": ("seven eighths", "and seven eighths"),
}

# Fixed phrases whose numbers are not fractions.
SET_PHRASES = {"24/7": "twenty-four seven", "50/50": "fifty-fifty", "9/11": "nine eleven"}

# How the punctuation of web and e-mail addresses is read.
URL_SYMBOLS = {
    ".": "dot",
    "/": "slash",
    "-": "dash",
    "_": "underscore",
    ":": "colon",
    "?": "question mark",
    "=": "equals",
    "&": "and",
    "#": "hash",
    "%": "percent",
    "@": "at",
    "~": "tilde",
    "+": "plus",
}

# Top-level domains that make "example.com" a web address, not two sentences.
TLDS = (
    "com|org|net|edu|gov|mil|int|io|ai|dev|app|co|us|uk|de|fr|es|it|nl|eu|ca|au|jp|cn|in|ru|br|ch"
    "|se|no|info|biz|me|tv|xyz|online|site|tech|cloud|ly|gg|fm"
)

# Words before a Roman numeral that make it a plain number ("Chapter IV").
ROMAN_KEYWORDS = (
    "Chapter|Part|Volume|Vol\\.|Book|Act|Scene|Section|Article|Phase|Stage|Round|Level|Season|Episode"
    "|Title|Type|Class|Grade|Appendix|World War|Super Bowl"
)

# Names whose Roman numeral is a regnal number ("Henry VIII" -> "Henry the eighth").
# fmt: off
REGNAL_NAMES = frozenset([
    "Henry", "Elizabeth", "Louis", "Charles", "George", "Edward", "William", "James", "Richard", "John", "Paul",
    "Pius", "Benedict", "Gregory", "Leo", "Peter", "Frederick", "Philip", "Ferdinand", "Alexander", "Nicholas",
    "Catherine", "Mary", "Napoleon", "Constantine", "Innocent", "Clement", "Boniface", "Urban", "Alfonso", "Juan",
    "Carlos", "Felipe", "Ludwig", "Otto", "Wilhelm", "Gustav", "Olaf", "Harald", "Haakon", "Christian",
    "Ramesses", "Ivan", "Victor", "Umberto", "Francis", "Sixtus", "Julius", "Alexios", "Basil", "Michael",
    "Leopold"
])
# fmt: on

# The letter "a" alone is read as the article; "eh" makes espeak-ng say its name.
LETTER_NAMES = {"a": "eh", "A": "eh"}


def spell(letters: str, separator: str = "-") -> str:
    """Letter names joined so espeak-ng spells them: USA -> "U-S-eh"."""
    return separator.join(LETTER_NAMES.get(ch, ch.upper()) for ch in letters if ch.isalnum())
