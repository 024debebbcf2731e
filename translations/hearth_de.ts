<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="de">
    <context>
        <name>AdapterPanel</name>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA-Adapter</translation>
        </message>
        <message>
            <source>Adapters change a loaded model's behaviour without loading another model. This version of Hearth cannot apply them yet; they will be listed here.</source>
            <translation>Adapter verändern das Verhalten eines geladenen Modells, ohne ein anderes Modell zu laden. Diese Version von Hearth kann sie noch nicht anwenden; sie werden hier aufgeführt.</translation>
        </message>
    </context>
    <context>
        <name>ChatExport</name>
        <message>
            <source>You</source>
            <translation>Sie</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>Assistent</translation>
        </message>
        <message>
            <source>System</source>
            <translation>System</translation>
        </message>
        <message>
            <source>Exported from Hearth on %1</source>
            <translation>Aus Hearth exportiert am %1</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>Systemprompt</translation>
        </message>
        <message>
            <source>(answer interrupted)</source>
            <translation>(Antwort unterbrochen)</translation>
        </message>
        <message>
            <source>%1 tokens, %2 tokens/s</source>
            <translation>%1 Token, %2 Token/s</translation>
        </message>
    </context>
    <context>
        <name>ChatView</name>
        <message>
            <source>Chat</source>
            <translation>Chat</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>Neuer Chat</translation>
        </message>
        <message>
            <source>System prompt and sampling of this conversation</source>
            <translation>Systemprompt und Sampling dieser Unterhaltung</translation>
        </message>
        <message>
            <source>Messages</source>
            <translation>Nachrichten</translation>
        </message>
        <message>
            <source>What can I help you with?</source>
            <translation>Wobei kann ich helfen?</translation>
        </message>
        <message>
            <source>Everything runs on this computer. Your conversations stay here.</source>
            <translation>Alles läuft auf diesem Computer. Ihre Unterhaltungen bleiben hier.</translation>
        </message>
        <message>
            <source>Load a model to start: it runs entirely on this computer.</source>
            <translation>Laden Sie ein Modell, um zu beginnen: Es läuft vollständig auf diesem Computer.</translation>
        </message>
        <message>
            <source>Choose a model…</source>
            <translation>Modell wählen…</translation>
        </message>
        <message>
            <source>Choose a model to load</source>
            <translation>Ein Modell zum Laden wählen</translation>
        </message>
    </context>
    <context>
        <name>CodeBlock</name>
        <message>
            <source>Code block, %1</source>
            <translation>Codeblock, %1</translation>
        </message>
        <message>
            <source>Code block</source>
            <translation>Codeblock</translation>
        </message>
        <message>
            <source>code</source>
            <translation>Code</translation>
        </message>
        <message>
            <source>Copied</source>
            <translation>Kopiert</translation>
        </message>
        <message>
            <source>Copy</source>
            <translation>Kopieren</translation>
        </message>
        <message>
            <source>Copy code</source>
            <translation>Code kopieren</translation>
        </message>
        <message>
            <source>Code</source>
            <translation>Code</translation>
        </message>
    </context>
    <context>
        <name>Composer</name>
        <message>
            <source>Message Hearth…</source>
            <translation>Nachricht an Hearth…</translation>
        </message>
        <message>
            <source>Load a model to start chatting</source>
            <translation>Laden Sie ein Modell, um zu chatten</translation>
        </message>
        <message>
            <source>Message</source>
            <translation>Nachricht</translation>
        </message>
        <message>
            <source>Enter sends, Shift+Enter starts a new line</source>
            <translation>Eingabetaste sendet, Umschalt+Eingabetaste beginnt eine neue Zeile</translation>
        </message>
        <message>
            <source>Send</source>
            <translation>Senden</translation>
        </message>
        <message>
            <source>Send message (Enter)</source>
            <translation>Nachricht senden (Eingabetaste)</translation>
        </message>
        <message>
            <source>Send (Enter)</source>
            <translation>Senden (Eingabetaste)</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>Stopp</translation>
        </message>
        <message>
            <source>Stop generating (Esc)</source>
            <translation>Generierung stoppen (Esc)</translation>
        </message>
        <message>
            <source>Stop (Esc)</source>
            <translation>Stopp (Esc)</translation>
        </message>
        <message>
            <source>No model is loaded.</source>
            <translation>Kein Modell geladen.</translation>
        </message>
        <message>
            <source>Answers come from a language model and can be wrong.</source>
            <translation>Antworten stammen von einem Sprachmodell und können falsch sein.</translation>
        </message>
    </context>
    <context>
        <name>ConversationSettingsDialog</name>
        <message>
            <source>Conversation settings</source>
            <translation>Einstellungen der Unterhaltung</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>Systemprompt</translation>
        </message>
        <message>
            <source>Instructions the model follows throughout this conversation</source>
            <translation>Anweisungen, denen das Modell während dieser Unterhaltung folgt</translation>
        </message>
        <message>
            <source>Use its own sampling settings</source>
            <translation>Eigene Sampling-Einstellungen verwenden</translation>
        </message>
    </context>
    <context>
        <name>ErrorDialog</name>
        <message>
            <source>Needed</source>
            <translation>Benötigt</translation>
        </message>
        <message>
            <source>Free</source>
            <translation>Frei</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>Gerät</translation>
        </message>
        <message>
            <source>Try a smaller maximum sequence length or cache, the CPU, or a more strongly quantized version of the model.</source>
            <translation>Versuchen Sie eine kleinere maximale Sequenzlänge oder einen kleineren Cache, die CPU oder eine stärker quantisierte Version des Modells.</translation>
        </message>
        <message>
            <source>Copy details</source>
            <translation>Details kopieren</translation>
        </message>
        <message>
            <source>Copy the error details</source>
            <translation>Die Fehlerdetails kopieren</translation>
        </message>
    </context>
    <context>
        <name>ExportDialog</name>
        <message>
            <source>Export as Markdown</source>
            <translation>Als Markdown exportieren</translation>
        </message>
        <message>
            <source>Export as JSON</source>
            <translation>Als JSON exportieren</translation>
        </message>
        <message>
            <source>Markdown (*.md)</source>
            <translation>Markdown (*.md)</translation>
        </message>
        <message>
            <source>JSON (*.json)</source>
            <translation>JSON (*.json)</translation>
        </message>
    </context>
    <context>
        <name>ImportDialog</name>
        <message>
            <source>Import a conversation</source>
            <translation>Eine Unterhaltung importieren</translation>
        </message>
        <message>
            <source>Hearth conversations (*.json)</source>
            <translation>Hearth-Unterhaltungen (*.json)</translation>
        </message>
    </context>
    <context>
        <name>LibraryDialog</name>
        <message>
            <source>Model library</source>
            <translation>Modellbibliothek</translation>
        </message>
        <message>
            <source>Import a GGUF file…</source>
            <translation>GGUF-Datei importieren…</translation>
        </message>
        <message>
            <source>Import a model folder…</source>
            <translation>Modellordner importieren…</translation>
        </message>
        <message>
            <source>Looking for models</source>
            <translation>Suche nach Modellen</translation>
        </message>
        <message>
            <source>Look for models again</source>
            <translation>Erneut nach Modellen suchen</translation>
        </message>
        <message>
            <source>Quantize…</source>
            <translation>Quantisieren…</translation>
        </message>
        <message>
            <source>The quantization wizard is not part of this version yet.</source>
            <translation>Der Quantisierungsassistent ist in dieser Version noch nicht enthalten.</translation>
        </message>
        <message>
            <source>Quantize a model (not available yet)</source>
            <translation>Ein Modell quantisieren (noch nicht verfügbar)</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>Modelle</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 · context %5</source>
            <translation>%1 · %2 Parameter · %3 Bit pro Gewicht · %4 · Kontext %5</translation>
        </message>
        <message>
            <source>Use</source>
            <translation>Verwenden</translation>
        </message>
        <message>
            <source>Use %1</source>
            <translation>%1 verwenden</translation>
        </message>
        <message>
            <source>Remove %1 from the library (the files stay on disk)</source>
            <translation>%1 aus der Bibliothek entfernen (die Dateien bleiben auf dem Datenträger)</translation>
        </message>
        <message>
            <source>No models yet. Put GGUF files or model folders into %1, add a folder below, or import a model.</source>
            <translation>Noch keine Modelle. Legen Sie GGUF-Dateien oder Modellordner in %1 ab, fügen Sie unten einen Ordner hinzu oder importieren Sie ein Modell.</translation>
        </message>
        <message>
            <source>Folders</source>
            <translation>Ordner</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1 (Standard)</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>Nicht mehr in %1 suchen</translation>
        </message>
        <message>
            <source>Add a folder…</source>
            <translation>Ordner hinzufügen…</translation>
        </message>
        <message>
            <source>Import a GGUF model</source>
            <translation>Ein GGUF-Modell importieren</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF-Modelle (*.gguf)</translation>
        </message>
        <message>
            <source>This model cannot be imported.</source>
            <translation>Dieses Modell kann nicht importiert werden.</translation>
        </message>
        <message>
            <source>Add a folder of models</source>
            <translation>Einen Modellordner hinzufügen</translation>
        </message>
        <message>
            <source>Import a model folder</source>
            <translation>Einen Modellordner importieren</translation>
        </message>
    </context>
    <context>
        <name>LivePanel</name>
        <message>
            <source>Load a model to see its memory use and speed here.</source>
            <translation>Laden Sie ein Modell, um hier seinen Speicherbedarf und seine Geschwindigkeit zu sehen.</translation>
        </message>
        <message>
            <source>Memory on %1</source>
            <translation>Speicher auf %1</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>Speicher</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>Gewichte</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>Cache</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>Aktivierungen</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>Arbeitsspeicher</translation>
        </message>
        <message>
            <source>Hearth uses %1 · %2 free of %3</source>
            <translation>Hearth belegt %1 · %2 von %3 frei</translation>
        </message>
        <message>
            <source>Speed</source>
            <translation>Geschwindigkeit</translation>
        </message>
        <message>
            <source>Prompt</source>
            <translation>Prompt</translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 Token/s</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>Generierung</translation>
        </message>
        <message>
            <source>Now</source>
            <translation>Jetzt</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>Kontext</translation>
        </message>
        <message>
            <source>Context used</source>
            <translation>Belegter Kontext</translation>
        </message>
        <message>
            <source>%1 of %2 tokens used by the last answer</source>
            <translation>%1 von %2 Token durch die letzte Antwort belegt</translation>
        </message>
    </context>
    <context>
        <name>LoadPanel</name>
        <message>
            <source>Model</source>
            <translation>Modell</translation>
        </message>
        <message>
            <source>No models found</source>
            <translation>Keine Modelle gefunden</translation>
        </message>
        <message>
            <source>Model to load</source>
            <translation>Zu ladendes Modell</translation>
        </message>
        <message>
            <source>Open a model file or folder…</source>
            <translation>Modelldatei oder -ordner öffnen…</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 on disk · trained for %5 tokens</source>
            <translation>%1 · %2 Parameter · %3 Bit pro Gewicht · %4 auf dem Datenträger · trainiert für %5 Token</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>Gerät</translation>
        </message>
        <message>
            <source>GPU</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Run on the GPU</source>
            <translation>Auf der GPU ausführen</translation>
        </message>
        <message>
            <source>This build of Hearth has no CUDA support.</source>
            <translation>Dieser Build von Hearth unterstützt CUDA nicht.</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>Run on the CPU</source>
            <translation>Auf der CPU ausführen</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>Kontext</translation>
        </message>
        <message>
            <source>Maximum sequence length</source>
            <translation>Maximale Sequenzlänge</translation>
        </message>
        <message>
            <source>Maximum sequence length in tokens</source>
            <translation>Maximale Sequenzlänge in Token</translation>
        </message>
        <message>
            <source>Longer than the %1 tokens the model was trained for: choose a RoPE scaling, or expect poor answers past that length.</source>
            <translation>Länger als die %1 Token, für die das Modell trainiert wurde: Wählen Sie eine RoPE-Skalierung, sonst werden Antworten jenseits dieser Länge schlecht.</translation>
        </message>
        <message>
            <source>Cache size (tokens)</source>
            <translation>Cachegröße (Token)</translation>
        </message>
        <message>
            <source>0 sizes the cache for the maximum sequence length.</source>
            <translation>0 bemisst den Cache nach der maximalen Sequenzlänge.</translation>
        </message>
        <message>
            <source>Cache size in tokens, 0 for automatic</source>
            <translation>Cachegröße in Token, 0 für automatisch</translation>
        </message>
        <message>
            <source>RoPE scaling</source>
            <translation>RoPE-Skalierung</translation>
        </message>
        <message>
            <source>As the model specifies (%1)</source>
            <translation>Wie vom Modell vorgegeben (%1)</translation>
        </message>
        <message>
            <source>none</source>
            <translation>keine</translation>
        </message>
        <message>
            <source>None</source>
            <translation>Keine</translation>
        </message>
        <message>
            <source>Linear</source>
            <translation>Linear</translation>
        </message>
        <message>
            <source>NTK-aware (alpha)</source>
            <translation>NTK-bewusst (Alpha)</translation>
        </message>
        <message>
            <source>YaRN</source>
            <translation>YaRN</translation>
        </message>
        <message>
            <source>Llama 3</source>
            <translation>Llama 3</translation>
        </message>
        <message>
            <source>RoPE scaling method</source>
            <translation>Verfahren der RoPE-Skalierung</translation>
        </message>
        <message>
            <source>Scaling factor</source>
            <translation>Skalierungsfaktor</translation>
        </message>
        <message>
            <source>How many times the trained context the model should reach.</source>
            <translation>Das Wievielfache des trainierten Kontexts das Modell erreichen soll.</translation>
        </message>
        <message>
            <source>Alpha</source>
            <translation>Alpha</translation>
        </message>
        <message>
            <source>NTK-aware scaling of the rotary base; 1 changes nothing.</source>
            <translation>NTK-bewusste Skalierung der Rotationsbasis; 1 ändert nichts.</translation>
        </message>
        <message>
            <source>Original context</source>
            <translation>Ursprünglicher Kontext</translation>
        </message>
        <message>
            <source>Low-frequency factor</source>
            <translation>Niederfrequenzfaktor</translation>
        </message>
        <message>
            <source>High-frequency factor</source>
            <translation>Hochfrequenzfaktor</translation>
        </message>
        <message>
            <source>Beta fast</source>
            <translation>Beta schnell</translation>
        </message>
        <message>
            <source>Beta slow</source>
            <translation>Beta langsam</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>Speicher</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>Gewichte</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>Cache</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>Aktivierungen</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>Arbeitsspeicher</translation>
        </message>
        <message>
            <source>Working out the memory plan…</source>
            <translation>Speicherplan wird berechnet…</translation>
        </message>
        <message>
            <source>Choose a model to see what it needs.</source>
            <translation>Wählen Sie ein Modell, um seinen Bedarf zu sehen.</translation>
        </message>
        <message>
            <source>Needs %1 of %2 free on %3.</source>
            <translation>Benötigt %1 von %2 freiem Speicher auf %3.</translation>
        </message>
        <message>
            <source>It does not fit.</source>
            <translation>Das passt nicht.</translation>
        </message>
        <message>
            <source>Load instead</source>
            <translation>Stattdessen laden</translation>
        </message>
        <message>
            <source>Load</source>
            <translation>Laden</translation>
        </message>
        <message>
            <source>Load the model with these settings</source>
            <translation>Das Modell mit diesen Einstellungen laden</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>Laden abbrechen</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>Ladefortschritt</translation>
        </message>
        <message>
            <source>Open a model</source>
            <translation>Ein Modell öffnen</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF-Modelle (*.gguf)</translation>
        </message>
        <message>
            <source>Model configuration (config.json)</source>
            <translation>Modellkonfiguration (config.json)</translation>
        </message>
    </context>
    <context>
        <name>Main</name>
        <message>
            <source>%1 — Hearth</source>
            <translation>%1 — Hearth</translation>
        </message>
        <message>
            <source>Your conversation history could not be opened.</source>
            <translation>Ihr Unterhaltungsverlauf konnte nicht geöffnet werden.</translation>
        </message>
        <message>
            <source>Conversations of this session will not be saved.</source>
            <translation>Unterhaltungen dieser Sitzung werden nicht gespeichert.</translation>
        </message>
        <message>
            <source>The conversation could not be exported.</source>
            <translation>Die Unterhaltung konnte nicht exportiert werden.</translation>
        </message>
        <message>
            <source>The conversation could not be imported.</source>
            <translation>Die Unterhaltung konnte nicht importiert werden.</translation>
        </message>
        <message>
            <source>Something went wrong.</source>
            <translation>Etwas ist schiefgelaufen.</translation>
        </message>
    </context>
    <context>
        <name>MemoryBar</name>
        <message>
            <source>Memory: %1 of %2</source>
            <translation>Speicher: %1 von %2</translation>
        </message>
    </context>
    <context>
        <name>MessageDelegate</name>
        <message>
            <source>You</source>
            <translation>Sie</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>Assistent</translation>
        </message>
        <message>
            <source>Your message</source>
            <translation>Ihre Nachricht</translation>
        </message>
        <message>
            <source>Edit your message</source>
            <translation>Ihre Nachricht bearbeiten</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>Abbrechen</translation>
        </message>
        <message>
            <source>Send again</source>
            <translation>Erneut senden</translation>
        </message>
        <message>
            <source>The model is thinking</source>
            <translation>Das Modell denkt nach</translation>
        </message>
        <message>
            <source>This answer was interrupted.</source>
            <translation>Diese Antwort wurde unterbrochen.</translation>
        </message>
        <message numerus="yes">
            <source>%n token(s)</source>
            <translation>
                <numerusform>%n Token</numerusform>
                <numerusform>%n Token</numerusform>
            </translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 Token/s</translation>
        </message>
        <message>
            <source>prompt %1 tokens/s</source>
            <translation>Prompt %1 Token/s</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>gestoppt</translation>
        </message>
        <message>
            <source>cut at the token limit</source>
            <translation>am Token-Limit abgeschnitten</translation>
        </message>
        <message>
            <source>Copy message</source>
            <translation>Nachricht kopieren</translation>
        </message>
        <message>
            <source>Edit and send again</source>
            <translation>Bearbeiten und erneut senden</translation>
        </message>
        <message>
            <source>Regenerate the answer</source>
            <translation>Antwort neu erzeugen</translation>
        </message>
    </context>
    <context>
        <name>ModelBar</name>
        <message>
            <source>Show or hide conversations (Ctrl+B)</source>
            <translation>Unterhaltungen ein- oder ausblenden (Strg+B)</translation>
        </message>
        <message>
            <source>Loading… %1</source>
            <translation>Wird geladen… %1</translation>
        </message>
        <message>
            <source>No model loaded</source>
            <translation>Kein Modell geladen</translation>
        </message>
        <message>
            <source>%1 · %2 · %3 tokens</source>
            <translation>%1 · %2 · %3 Token</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>Ladefortschritt</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>Abbrechen</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>Laden abbrechen</translation>
        </message>
        <message>
            <source>Unload</source>
            <translation>Entladen</translation>
        </message>
        <message>
            <source>Unload the model</source>
            <translation>Das Modell entladen</translation>
        </message>
        <message>
            <source>Load a model…</source>
            <translation>Modell laden…</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>Ein Modell laden</translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 Token/s</translation>
        </message>
        <message>
            <source>Model library (Ctrl+L)</source>
            <translation>Modellbibliothek (Strg+L)</translation>
        </message>
        <message>
            <source>Show or hide the model and performance panel</source>
            <translation>Modell- und Leistungsbereich ein- oder ausblenden</translation>
        </message>
        <message>
            <source>Settings (Ctrl+,)</source>
            <translation>Einstellungen (Strg+,)</translation>
        </message>
    </context>
    <context>
        <name>QObject</name>
        <message>
            <source>Cannot write %1: %2</source>
            <translation>%1 kann nicht geschrieben werden: %2</translation>
        </message>
    </context>
    <context>
        <name>RateChart</name>
        <message>
            <source>Tokens per second during the answer</source>
            <translation>Token pro Sekunde während der Antwort</translation>
        </message>
    </context>
    <context>
        <name>SamplingEditor</name>
        <message>
            <source>Temperature</source>
            <translation>Temperatur</translation>
        </message>
        <message>
            <source>0 always picks the most likely token; higher values vary more.</source>
            <translation>0 wählt immer das wahrscheinlichste Token; höhere Werte variieren stärker.</translation>
        </message>
        <message>
            <source>Top-k</source>
            <translation>Top-k</translation>
        </message>
        <message>
            <source>Sample among the k most likely tokens; 0 turns it off.</source>
            <translation>Aus den k wahrscheinlichsten Token auswählen; 0 schaltet es ab.</translation>
        </message>
        <message>
            <source>Top-p</source>
            <translation>Top-p</translation>
        </message>
        <message>
            <source>Sample among the most likely tokens that together reach this probability; 1 turns it off.</source>
            <translation>Aus den wahrscheinlichsten Token auswählen, die zusammen diese Wahrscheinlichkeit erreichen; 1 schaltet es ab.</translation>
        </message>
        <message>
            <source>Min-p</source>
            <translation>Min-p</translation>
        </message>
        <message>
            <source>Drop tokens less likely than this fraction of the most likely one; 0 turns it off.</source>
            <translation>Token verwerfen, die weniger wahrscheinlich sind als dieser Anteil des wahrscheinlichsten; 0 schaltet es ab.</translation>
        </message>
        <message>
            <source>Repetition penalty</source>
            <translation>Wiederholungsstrafe</translation>
        </message>
        <message>
            <source>Above 1 discourages repeating earlier tokens; 1 turns it off.</source>
            <translation>Über 1 wird das Wiederholen früherer Token erschwert; 1 schaltet es ab.</translation>
        </message>
        <message>
            <source>Longest answer (tokens)</source>
            <translation>Längste Antwort (Token)</translation>
        </message>
    </context>
    <context>
        <name>SettingsDialog</name>
        <message>
            <source>Settings</source>
            <translation>Einstellungen</translation>
        </message>
        <message>
            <source>Appearance</source>
            <translation>Darstellung</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>Generierung</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>Modelle</translation>
        </message>
        <message>
            <source>Theme</source>
            <translation>Farbschema</translation>
        </message>
        <message>
            <source>Follow the system</source>
            <translation>Wie das System</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>Hell</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>Dunkel</translation>
        </message>
        <message>
            <source>Theme: %1</source>
            <translation>Farbschema: %1</translation>
        </message>
        <message>
            <source>Text size</source>
            <translation>Schriftgröße</translation>
        </message>
        <message>
            <source>Text size in points</source>
            <translation>Schriftgröße in Punkt</translation>
        </message>
        <message>
            <source>%1 pt</source>
            <translation>%1 pt</translation>
        </message>
        <message>
            <source>Language</source>
            <translation>Sprache</translation>
        </message>
        <message>
            <source>Default sampling for conversations without their own</source>
            <translation>Standard-Sampling für Unterhaltungen ohne eigenes</translation>
        </message>
        <message>
            <source>Restore the defaults</source>
            <translation>Standardwerte wiederherstellen</translation>
        </message>
        <message>
            <source>System prompt for new conversations</source>
            <translation>Systemprompt für neue Unterhaltungen</translation>
        </message>
        <message>
            <source>Folders searched for models</source>
            <translation>Nach Modellen durchsuchte Ordner</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1 (Standard)</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>Nicht mehr in %1 suchen</translation>
        </message>
        <message>
            <source>Add folders and import single models in the model library (Ctrl+L).</source>
            <translation>Ordner hinzufügen und einzelne Modelle importieren Sie in der Modellbibliothek (Strg+L).</translation>
        </message>
    </context>
    <context>
        <name>SidePanel</name>
        <message>
            <source>Model and performance</source>
            <translation>Modell und Leistung</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>Modell</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>Ein Modell laden</translation>
        </message>
        <message>
            <source>Live</source>
            <translation>Live</translation>
        </message>
        <message>
            <source>Memory and speed</source>
            <translation>Speicher und Geschwindigkeit</translation>
        </message>
        <message>
            <source>Adapters</source>
            <translation>Adapter</translation>
        </message>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA-Adapter</translation>
        </message>
    </context>
    <context>
        <name>Sidebar</name>
        <message>
            <source>Conversations</source>
            <translation>Unterhaltungen</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>Neuer Chat</translation>
        </message>
        <message>
            <source>New chat (Ctrl+N)</source>
            <translation>Neuer Chat (Strg+N)</translation>
        </message>
        <message>
            <source>Search conversations (Ctrl+F)</source>
            <translation>Unterhaltungen durchsuchen (Strg+F)</translation>
        </message>
        <message>
            <source>Search conversations</source>
            <translation>Unterhaltungen durchsuchen</translation>
        </message>
        <message>
            <source>Conversation list</source>
            <translation>Liste der Unterhaltungen</translation>
        </message>
        <message>
            <source>Actions for %1</source>
            <translation>Aktionen für %1</translation>
        </message>
        <message>
            <source>Rename…</source>
            <translation>Umbenennen…</translation>
        </message>
        <message>
            <source>Export as Markdown…</source>
            <translation>Als Markdown exportieren…</translation>
        </message>
        <message>
            <source>Export as JSON…</source>
            <translation>Als JSON exportieren…</translation>
        </message>
        <message>
            <source>Delete</source>
            <translation>Löschen</translation>
        </message>
        <message>
            <source>Nothing found.</source>
            <translation>Nichts gefunden.</translation>
        </message>
        <message>
            <source>Your conversations will appear here.</source>
            <translation>Ihre Unterhaltungen erscheinen hier.</translation>
        </message>
        <message>
            <source>Import…</source>
            <translation>Importieren…</translation>
        </message>
        <message>
            <source>Import a conversation from JSON</source>
            <translation>Eine Unterhaltung aus JSON importieren</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>Modelle</translation>
        </message>
        <message>
            <source>Open the model library</source>
            <translation>Die Modellbibliothek öffnen</translation>
        </message>
        <message>
            <source>Rename conversation</source>
            <translation>Unterhaltung umbenennen</translation>
        </message>
        <message>
            <source>Conversation title</source>
            <translation>Titel der Unterhaltung</translation>
        </message>
    </context>
    <context>
        <name>UndoBar</name>
        <message>
            <source>Deleted “%1”</source>
            <translation>„%1“ gelöscht</translation>
        </message>
        <message>
            <source>Undo</source>
            <translation>Rückgängig</translation>
        </message>
        <message>
            <source>Undo the deletion</source>
            <translation>Das Löschen rückgängig machen</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ChatSession</name>
        <message>
            <source>Load a model first: choose one in the model bar or the library.</source>
            <translation>Laden Sie zuerst ein Modell: Wählen Sie eines in der Modellleiste oder der Bibliothek.</translation>
        </message>
        <message>
            <source>The model is busy or not loaded.</source>
            <translation>Das Modell ist beschäftigt oder nicht geladen.</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ConversationList</name>
        <message>
            <source>Today</source>
            <translation>Heute</translation>
        </message>
        <message>
            <source>Yesterday</source>
            <translation>Gestern</translation>
        </message>
        <message>
            <source>Previous 7 days</source>
            <translation>Letzte 7 Tage</translation>
        </message>
        <message>
            <source>Previous 30 days</source>
            <translation>Letzte 30 Tage</translation>
        </message>
        <message>
            <source>Older</source>
            <translation>Älter</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>Neuer Chat</translation>
        </message>
        <message>
            <source>Cannot read %1: %2</source>
            <translation>%1 kann nicht gelesen werden: %2</translation>
        </message>
        <message>
            <source>%1 is too large to be a conversation export.</source>
            <translation>%1 ist zu groß für einen Export einer Unterhaltung.</translation>
        </message>
        <message>
            <source>%1 is not a conversation Hearth can import: %2</source>
            <translation>%1 ist keine Unterhaltung, die Hearth importieren kann: %2</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::EngineController</name>
        <message>
            <source>The model could not be loaded.</source>
            <translation>Das Modell konnte nicht geladen werden.</translation>
        </message>
        <message>
            <source>Starting</source>
            <translation>Wird gestartet</translation>
        </message>
        <message>
            <source>The answer could not be generated.</source>
            <translation>Die Antwort konnte nicht erzeugt werden.</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::LanguageManager</name>
        <message>
            <source>System language</source>
            <translation>Systemsprache</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ModelLibrary</name>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 existiert nicht.</translation>
        </message>
        <message>
            <source>%1 is neither a .gguf file nor a model folder (a folder with config.json).</source>
            <translation>%1 ist weder eine .gguf-Datei noch ein Modellordner (ein Ordner mit config.json).</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::UiHelpers</name>
        <message>
            <source>%1 B</source>
            <comment>billions, e.g. of parameters</comment>
            <translation>%1 Mrd.</translation>
        </message>
        <message>
            <source>%1 M</source>
            <comment>millions, e.g. of parameters</comment>
            <translation>%1 Mio.</translation>
        </message>
        <message>
            <source>%1 K</source>
            <comment>thousands</comment>
            <translation>%1 Tsd.</translation>
        </message>
    </context>
    <context>
        <name>main</name>
        <message>
            <source>Run large language models on your own computer.</source>
            <translation>Große Sprachmodelle auf dem eigenen Computer ausführen.</translation>
        </message>
        <message>
            <source>Load this model at start.</source>
            <translation>Dieses Modell beim Start laden.</translation>
        </message>
        <message>
            <source>Send this message once the model is loaded.</source>
            <translation>Diese Nachricht senden, sobald das Modell geladen ist.</translation>
        </message>
        <message>
            <source>After the answer, save the window to this PNG and quit.</source>
            <translation>Nach der Antwort das Fenster in diese PNG-Datei speichern und beenden.</translation>
        </message>
        <message>
            <source>cpu or gpu.</source>
            <translation>cpu oder gpu.</translation>
        </message>
        <message>
            <source>Seconds the scripted session may take.</source>
            <translation>Sekunden, die die geskriptete Sitzung dauern darf.</translation>
        </message>
    </context>
</TS>
