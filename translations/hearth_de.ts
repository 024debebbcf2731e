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
            <source>Adapters change a loaded model's behaviour without loading another model. Those switched on are applied again whenever a model loads.</source>
            <translation>Adapter verändern das Verhalten eines geladenen Modells, ohne ein anderes Modell zu laden. Eingeschaltete Adapter werden bei jedem Laden eines Modells wieder angewendet.</translation>
        </message>
        <message>
            <source>No model is loaded. Load one to see which adapters fit it and to apply them; adapters switched on now are applied when it loads.</source>
            <translation>Es ist kein Modell geladen. Laden Sie eines, um zu sehen, welche Adapter dazu passen, und um sie anzuwenden; jetzt eingeschaltete Adapter werden beim Laden angewendet.</translation>
        </message>
        <message>
            <source>Applying once the answer is written…</source>
            <translation>Wird angewendet, sobald die Antwort fertig ist …</translation>
        </message>
        <message>
            <source>Applying…</source>
            <translation>Wird angewendet …</translation>
        </message>
        <message>
            <source>Applied in %1 ms, without reloading the model.</source>
            <translation>In %1 ms angewendet, ohne das Modell neu zu laden.</translation>
        </message>
        <message>
            <source>Apply %1</source>
            <translation>%1 anwenden</translation>
        </message>
        <message>
            <source>Remove from this list</source>
            <translation>Aus dieser Liste entfernen</translation>
        </message>
        <message>
            <source>PEFT folder</source>
            <translation>PEFT-Ordner</translation>
        </message>
        <message>
            <source>GGUF file</source>
            <translation>GGUF-Datei</translation>
        </message>
        <message numerus="yes">
            <source>%1 · rank %2 · %3 · %n layer(s) · %4</source>
            <translation>
                <numerusform>%1 · Rang %2 · %3 · %n Schicht · %4</numerusform>
                <numerusform>%1 · Rang %2 · %3 · %n Schichten · %4</numerusform>
            </translation>
        </message>
        <message>
            <source>Cannot be applied to the loaded model: %1</source>
            <translation>Kann auf das geladene Modell nicht angewendet werden: %1</translation>
        </message>
        <message>
            <source>Weight</source>
            <translation>Gewichtung</translation>
        </message>
        <message>
            <source>Weight of %1</source>
            <translation>Gewichtung von %1</translation>
        </message>
        <message>
            <source>Not applied: %1</source>
            <translation>Nicht angewendet: %1</translation>
        </message>
        <message>
            <source>Applied with weight %1.</source>
            <translation>Mit Gewichtung %1 angewendet.</translation>
        </message>
        <message>
            <source>Not applied yet.</source>
            <translation>Noch nicht angewendet.</translation>
        </message>
        <message>
            <source>Looking for adapters…</source>
            <translation>Adapter werden gesucht …</translation>
        </message>
        <message>
            <source>No adapters found in %1. Put PEFT adapter folders (with adapter_config.json) or GGUF adapters there, or add one.</source>
            <translation>Keine Adapter in %1 gefunden. Legen Sie dort PEFT-Adapterordner (mit adapter_config.json) oder GGUF-Adapter ab, oder fügen Sie einen hinzu.</translation>
        </message>
        <message>
            <source>Add…</source>
            <translation>Hinzufügen …</translation>
        </message>
        <message>
            <source>Add an adapter from another folder</source>
            <translation>Einen Adapter aus einem anderen Ordner hinzufügen</translation>
        </message>
        <message>
            <source>Look again</source>
            <translation>Erneut suchen</translation>
        </message>
        <message>
            <source>Look for adapters again</source>
            <translation>Erneut nach Adaptern suchen</translation>
        </message>
        <message>
            <source>Add a LoRA adapter</source>
            <translation>LoRA-Adapter hinzufügen</translation>
        </message>
        <message>
            <source>GGUF adapters (*.gguf)</source>
            <translation>GGUF-Adapter (*.gguf)</translation>
        </message>
        <message>
            <source>PEFT adapter configuration (adapter_config.json)</source>
            <translation>PEFT-Adapterkonfiguration (adapter_config.json)</translation>
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
        <message>
            <source>Adapters: %1</source>
            <translation>Adapter: %1</translation>
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
        <message>
            <source>Hearth is answering…</source>
            <translation>Hearth antwortet…</translation>
        </message>
        <message>
            <source>Loading the model…</source>
            <translation>Modell wird geladen…</translation>
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
        <message>
            <source>Quantizing… %1 %</source>
            <translation>Quantisiere… %1 %</translation>
        </message>
        <message>
            <source>Show the running quantization</source>
            <translation>Die laufende Quantisierung anzeigen</translation>
        </message>
        <message>
            <source>Quantize a model</source>
            <translation>Ein Modell quantisieren</translation>
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
            <source>Generation</source>
            <translation>Generierung</translation>
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
        <message>
            <source>%1 tokens, %2 tokens/s</source>
            <translation>%1 Token, %2 Token/s</translation>
        </message>
        <message>
            <source>%1 tokens, processing…</source>
            <translation>%1 Token, wird verarbeitet…</translation>
        </message>
        <message>
            <source>%1 tokens</source>
            <translation>%1 Token</translation>
        </message>
        <message>
            <source>%1 of %2 tokens used by this answer</source>
            <translation>%1 von %2 Token durch diese Antwort belegt</translation>
        </message>
        <message>
            <source>Prompt cache</source>
            <translation>Prompt-Cache</translation>
        </message>
        <message>
            <source>reused %1 of %2 prompt tokens</source>
            <translation>%1 von %2 Prompt-Tokens wiederverwendet</translation>
        </message>
        <message>
            <source>Speculation</source>
            <translation>Spekulation</translation>
        </message>
        <message>
            <source>kept %1 of %2 proposed tokens (%3 %)</source>
            <translation>%1 von %2 vorgeschlagenen Tokens übernommen (%3 %)</translation>
        </message>
    </context>
    <context>
        <name>GpuNotice</name>
        <message>
            <source>Hearth runs models on the CPU on this computer</source>
            <translation>Hearth führt Modelle auf diesem Computer auf der CPU aus</translation>
        </message>
        <message>
            <source>OK</source>
            <translation>OK</translation>
        </message>
        <message>
            <source>Dismiss the GPU notice</source>
            <translation>GPU-Hinweis schließen</translation>
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
            <source>Automatic</source>
            <translation>Automatisch</translation>
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
            <source>Reload with these settings</source>
            <translation>Mit diesen Einstellungen neu laden</translation>
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
        <message>
            <source>The loaded model runs with this length.</source>
            <translation>Das geladene Modell läuft mit dieser Länge.</translation>
        </message>
        <message>
            <source>The loaded model runs with %1 tokens; this length applies when you reload.</source>
            <translation>Das geladene Modell läuft mit %1 Token; diese Länge gilt, wenn Sie neu laden.</translation>
        </message>
        <message>
            <source>Speculative decoding</source>
            <translation>Spekulatives Dekodieren</translation>
        </message>
        <message>
            <source>From the conversation&apos;s own text</source>
            <translation>Aus dem eigenen Text des Gesprächs</translation>
        </message>
        <message>
            <source>Off</source>
            <translation>Aus</translation>
        </message>
        <message>
            <source>Guesses the next tokens from earlier text and keeps those the model agrees with: answers that repeat the conversation (code edits, quotes, summaries) come faster; the answers themselves do not change.</source>
            <translation>Errät die nächsten Tokens aus früherem Text und übernimmt die, denen das Modell zustimmt: Antworten, die das Gespräch wiederholen (Code-Änderungen, Zitate, Zusammenfassungen), kommen schneller; die Antworten selbst ändern sich nicht.</translation>
        </message>
        <message>
            <source>Every token is computed one step at a time.</source>
            <translation>Jedes Token wird einzeln in einem eigenen Schritt berechnet.</translation>
        </message>
        <message>
            <source>With a smaller draft model</source>
            <translation>Mit einem kleineren Entwurfsmodell</translation>
        </message>
        <message>
            <source>Choose a draft model</source>
            <translation>Entwurfsmodell wählen</translation>
        </message>
        <message>
            <source>Draft model</source>
            <translation>Entwurfsmodell</translation>
        </message>
        <message>
            <source>A smaller model with the same vocabulary guesses the next tokens; the model keeps those it agrees with. The answers do not change.</source>
            <translation>Ein kleineres Modell mit demselben Vokabular errät die nächsten Tokens; das Modell übernimmt die, denen es zustimmt. Die Antworten ändern sich nicht.</translation>
        </message>
        <message>
            <source>Adapters</source>
            <translation>Adapter</translation>
        </message>
        <message>
            <source>An active adapter cannot be applied to this model; it loads without it: %1</source>
            <translation>Ein eingeschalteter Adapter kann auf dieses Modell nicht angewendet werden; es wird ohne ihn geladen: %1</translation>
        </message>
        <message>
            <source>KV cache</source>
            <translation>KV-Cache</translation>
        </message>
        <message>
            <source>fp16 (full precision)</source>
            <translation>fp16 (volle Genauigkeit)</translation>
        </message>
        <message>
            <source>q8</source>
            <translation>q8</translation>
        </message>
        <message>
            <source>q6</source>
            <translation>q6</translation>
        </message>
        <message>
            <source>q4</source>
            <translation>q4</translation>
        </message>
        <message>
            <source>KV cache precision</source>
            <translation>Genauigkeit des KV-Cache</translation>
        </message>
        <message>
            <source>Quantized caches hold about 1.9× (q8), 2.5× (q6) or 3.6× (q4) the tokens of fp16 in the same memory, with a small loss of quality (q8: nearly none).</source>
            <translation>Quantisierte Caches fassen im selben Speicher etwa 1,9× (q8), 2,5× (q6) oder 3,6× (q4) so viele Token wie fp16, bei einem kleinen Qualitätsverlust (q8: fast keinem).</translation>
        </message>
        <message>
            <source>Holds about 1.9× the tokens of fp16 in the same memory, with nearly no loss of quality.</source>
            <translation>Fasst im selben Speicher etwa 1,9× so viele Token wie fp16, fast ohne Qualitätsverlust.</translation>
        </message>
        <message>
            <source>Holds about 2.5× the tokens of fp16 in the same memory, with a small loss of quality.</source>
            <translation>Fasst im selben Speicher etwa 2,5× so viele Token wie fp16, bei einem kleinen Qualitätsverlust.</translation>
        </message>
        <message>
            <source>Holds about 3.6× the tokens of fp16 in the same memory, with a small loss of quality.</source>
            <translation>Fasst im selben Speicher etwa 3,6× so viele Token wie fp16, bei einem kleinen Qualitätsverlust.</translation>
        </message>
        <message>
            <source>Cache: %1 — no memory is left for it.</source>
            <translation>Cache: %1 – dafür ist kein Speicher mehr frei.</translation>
        </message>
        <message>
            <source>Cache: %1 — about %2 tokens fit</source>
            <translation>Cache: %1 – etwa %2 Token passen hinein</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPUs</translation>
        </message>
        <message>
            <source>One GPU</source>
            <translation>Eine GPU</translation>
        </message>
        <message>
            <source>Split by layers</source>
            <translation>Nach Schichten aufteilen</translation>
        </message>
        <message>
            <source>Each GPU runs a run of consecutive layers and keeps their cache: models larger than one card fit, at about one card&apos;s speed.</source>
            <translation>Jede GPU führt eine Folge aufeinanderfolgender Schichten aus und hält deren Cache: Modelle, die größer als eine Karte sind, passen, bei etwa der Geschwindigkeit einer Karte.</translation>
        </message>
        <message>
            <source>Tensor parallel</source>
            <translation>Tensorparallel</translation>
        </message>
        <message>
            <source>Every GPU runs its share of each layer&apos;s heads and MLP at the same time: faster generation, the cache divided between the cards.</source>
            <translation>Jede GPU berechnet gleichzeitig ihren Anteil an den Köpfen und dem MLP jeder Schicht: schnellere Generierung, der Cache auf die Karten verteilt.</translation>
        </message>
        <message>
            <source>Use %1</source>
            <translation>%1 verwenden</translation>
        </message>
        <message>
            <source>GiB on %1</source>
            <translation>GiB auf %1</translation>
        </message>
        <message>
            <source>GiB</source>
            <translation>GiB</translation>
        </message>
        <message>
            <source>Set how much each GPU takes</source>
            <translation>Festlegen, wie viel jede GPU übernimmt</translation>
        </message>
        <message>
            <source>Layers fill each GPU in the order ticked, up to its size; the last GPU also holds the output layer.</source>
            <translation>Die Schichten füllen jede GPU in der angehakten Reihenfolge bis zu ihrer Größe; die letzte GPU hält auch die Ausgabeschicht.</translation>
        </message>
        <message>
            <source>Layers are shared in proportion to each GPU&apos;s free memory, in the order ticked.</source>
            <translation>Die Schichten werden im Verhältnis zum freien Speicher jeder GPU verteilt, in der angehakten Reihenfolge.</translation>
        </message>
        <message>
            <source>%1 — layers %2–%3: %4 of %5 free</source>
            <translation>%1 — Schichten %2–%3: %4 von %5 frei</translation>
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
        <message>
            <source>Quantizing… %1 %</source>
            <translation>Quantisiere… %1 %</translation>
        </message>
        <message>
            <source>Quantization finished</source>
            <translation>Quantisierung beendet</translation>
        </message>
        <message>
            <source>Show the running quantization</source>
            <translation>Die laufende Quantisierung anzeigen</translation>
        </message>
        <message>
            <source>Show the result of the quantization</source>
            <translation>Das Ergebnis der Quantisierung anzeigen</translation>
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
        <message>
            <source>%1 × %2</source>
            <translation>%1 × %2</translation>
        </message>
        <message>
            <source>LoRA %1</source>
            <translation>LoRA %1</translation>
        </message>
        <message>
            <source>LoRA adapters: %1</source>
            <translation>LoRA-Adapter: %1</translation>
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
        <name>QuantizeCalibrationPage</name>
        <message>
            <source>Which text should the quantizer learn from?</source>
            <translation>Aus welchem Text soll der Quantisierer lernen?</translation>
        </message>
        <message>
            <source>The quantizer runs the model over this text and keeps what matters for it. Text like the model's later use gives the best results.</source>
            <translation>Der Quantisierer lässt das Modell über diesen Text laufen und bewahrt, worauf es dabei ankommt. Text, der dem späteren Einsatz des Modells ähnelt, liefert die besten Ergebnisse.</translation>
        </message>
        <message>
            <source>Hearth's built-in set</source>
            <translation>Hearths eingebauter Satz</translation>
        </message>
        <message>
            <source>Use Hearth's built-in calibration set</source>
            <translation>Hearths eingebauten Kalibrierungssatz verwenden</translation>
        </message>
        <message>
            <source>English prose, technical writing, Python and other code, several languages and chat conversations, all freely licensed.</source>
            <translation>Englische Prosa, Fachtexte, Python- und anderer Code, mehrere Sprachen und Chat-Unterhaltungen, alles frei lizenziert.</translation>
        </message>
        <message>
            <source>A file of my own</source>
            <translation>Eine eigene Datei</translation>
        </message>
        <message>
            <source>Use a calibration file of my own</source>
            <translation>Eine eigene Kalibrierungsdatei verwenden</translation>
        </message>
        <message>
            <source>Path to a .txt, .md or .jsonl file</source>
            <translation>Pfad zu einer .txt-, .md- oder .jsonl-Datei</translation>
        </message>
        <message>
            <source>Path of the calibration file</source>
            <translation>Pfad der Kalibrierungsdatei</translation>
        </message>
        <message>
            <source>Choose…</source>
            <translation>Auswählen…</translation>
        </message>
        <message>
            <source>Choose a calibration file</source>
            <translation>Eine Kalibrierungsdatei auswählen</translation>
        </message>
        <message>
            <source>Plain text or Markdown is read as it is. In JSON Lines, each line is an object with a "text" field, or a "messages" list of chat turns, which is written out with the model's chat template.</source>
            <translation>Reiner Text oder Markdown wird so gelesen, wie er ist. In JSON Lines ist jede Zeile ein Objekt mit einem Feld "text" oder einer Liste "messages" von Chat-Beiträgen, die mit der Chatvorlage des Modells ausgeschrieben wird.</translation>
        </message>
        <message>
            <source>Amount</source>
            <translation>Menge</translation>
        </message>
        <message>
            <source>Rows</source>
            <translation>Zeilen</translation>
        </message>
        <message>
            <source>Automatic</source>
            <translation>Automatisch</translation>
        </message>
        <message>
            <source>Rows of calibration text, 0 for automatic</source>
            <translation>Zeilen Kalibrierungstext, 0 für automatisch</translation>
        </message>
        <message>
            <source>Tokens per row</source>
            <translation>Token pro Zeile</translation>
        </message>
        <message>
            <source>Tokens per calibration row, 0 for automatic</source>
            <translation>Token pro Kalibrierungszeile, 0 für automatisch</translation>
        </message>
        <message>
            <source>Automatic takes more text on the GPU than on the CPU. More text is slower and usually a little better.</source>
            <translation>Automatisch nimmt auf der GPU mehr Text als auf der CPU. Mehr Text ist langsamer und meist etwas besser.</translation>
        </message>
        <message>
            <source>Text (*.txt *.md *.jsonl)</source>
            <translation>Text (*.txt *.md *.jsonl)</translation>
        </message>
    </context>
    <context>
        <name>QuantizeDialog</name>
        <message>
            <source>Quantize a model</source>
            <translation>Ein Modell quantisieren</translation>
        </message>
        <message>
            <source>Hide</source>
            <translation>Ausblenden</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>Schließen</translation>
        </message>
        <message>
            <source>Hide the wizard; the job goes on</source>
            <translation>Den Assistenten ausblenden; der Auftrag läuft weiter</translation>
        </message>
        <message>
            <source>Close the wizard</source>
            <translation>Den Assistenten schließen</translation>
        </message>
        <message>
            <source>The job goes on when you hide this window.</source>
            <translation>Der Auftrag läuft weiter, wenn Sie dieses Fenster ausblenden.</translation>
        </message>
        <message>
            <source>Back</source>
            <translation>Zurück</translation>
        </message>
        <message>
            <source>Back to the previous step</source>
            <translation>Zurück zum vorigen Schritt</translation>
        </message>
        <message>
            <source>Next</source>
            <translation>Weiter</translation>
        </message>
        <message>
            <source>Go on to the next step</source>
            <translation>Weiter zum nächsten Schritt</translation>
        </message>
        <message>
            <source>Start</source>
            <translation>Starten</translation>
        </message>
        <message>
            <source>Start quantizing</source>
            <translation>Quantisierung starten</translation>
        </message>
        <message>
            <source>Stopping…</source>
            <translation>Wird angehalten…</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>Anhalten</translation>
        </message>
        <message>
            <source>Stop the job; it can be resumed later</source>
            <translation>Den Auftrag anhalten; er kann später fortgesetzt werden</translation>
        </message>
        <message>
            <source>Back to the settings</source>
            <translation>Zurück zu den Einstellungen</translation>
        </message>
        <message>
            <source>Discard</source>
            <translation>Verwerfen</translation>
        </message>
        <message>
            <source>Discard the stopped job and its intermediate files</source>
            <translation>Den angehaltenen Auftrag und seine Zwischendateien verwerfen</translation>
        </message>
        <message>
            <source>Resume</source>
            <translation>Fortsetzen</translation>
        </message>
        <message>
            <source>Resume the stopped job</source>
            <translation>Den angehaltenen Auftrag fortsetzen</translation>
        </message>
        <message>
            <source>Quantize another</source>
            <translation>Ein weiteres quantisieren</translation>
        </message>
        <message>
            <source>Start the wizard again</source>
            <translation>Den Assistenten neu beginnen</translation>
        </message>
        <message>
            <source>Load now</source>
            <translation>Jetzt laden</translation>
        </message>
        <message>
            <source>Load the quantized model now</source>
            <translation>Das quantisierte Modell jetzt laden</translation>
        </message>
    </context>
    <context>
        <name>QuantizeFormatPage</name>
        <message>
            <source>Which format?</source>
            <translation>Welches Format?</translation>
        </message>
        <message>
            <source>EXL2 — the best quality for a size</source>
            <translation>EXL2 – die beste Qualität für eine Größe</translation>
        </message>
        <message>
            <source>Each layer gets the bits it needs: Hearth measures every layer's error on calibration text and picks the mix that meets an average you choose, from 2 to 8 bits per weight. Runs in Hearth and ExLlamaV2.</source>
            <translation>Jede Schicht erhält die Bits, die sie braucht: Hearth misst den Fehler jeder Schicht auf Kalibrierungstext und wählt die Mischung, die einen von Ihnen gewählten Durchschnitt von 2 bis 8 Bit pro Gewicht erreicht. Läuft in Hearth und ExLlamaV2.</translation>
        </message>
        <message>
            <source>GPTQ — the widely supported format</source>
            <translation>GPTQ – das weithin unterstützte Format</translation>
        </message>
        <message>
            <source>The same number of bits (2, 3, 4 or 8) for every layer, in groups of weights that share a scale. Runs in Hearth, ExLlama, Transformers, vLLM and most other tools.</source>
            <translation>Dieselbe Bitzahl (2, 3, 4 oder 8) für jede Schicht, in Gruppen von Gewichten mit gemeinsamem Skalierungsfaktor. Läuft in Hearth, ExLlama, Transformers, vLLM und den meisten anderen Werkzeugen.</translation>
        </message>
    </context>
    <context>
        <name>QuantizeJobList</name>
        <message>
            <source>Interrupted job: %1</source>
            <translation>Unterbrochener Auftrag: %1</translation>
        </message>
        <message>
            <source>The job file is damaged: %1</source>
            <translation>Die Auftragsdatei ist beschädigt: %1</translation>
        </message>
        <message>
            <source>From %1 · %2 · stopped while %3 (%4 of %5) · %6 done</source>
            <translation>Aus %1 · %2 · angehalten bei: %3 (%4 von %5) · %6 erledigt</translation>
        </message>
        <message>
            <source>Resume</source>
            <translation>Fortsetzen</translation>
        </message>
        <message>
            <source>Resume the job for %1</source>
            <translation>Den Auftrag für %1 fortsetzen</translation>
        </message>
        <message>
            <source>Discard</source>
            <translation>Verwerfen</translation>
        </message>
        <message>
            <source>Discard the job for %1 and its intermediate files</source>
            <translation>Den Auftrag für %1 und seine Zwischendateien verwerfen</translation>
        </message>
    </context>
    <context>
        <name>QuantizeResultPage</name>
        <message>
            <source>%1 is ready</source>
            <translation>%1 ist fertig</translation>
        </message>
        <message>
            <source>%1 from %2. It has been added to the model library.</source>
            <translation>%1 aus %2. Es wurde der Modellbibliothek hinzugefügt.</translation>
        </message>
        <message>
            <source>Result of the quantization</source>
            <translation>Ergebnis der Quantisierung</translation>
        </message>
        <message>
            <source>Size on disk</source>
            <translation>Größe auf dem Datenträger</translation>
        </message>
        <message>
            <source>(weights %1, estimated %2)</source>
            <translation>(Gewichte %1, geschätzt %2)</translation>
        </message>
        <message>
            <source>Bits per weight</source>
            <translation>Bit pro Gewicht</translation>
        </message>
        <message>
            <source>%1 in the decoder layers, %2 in the output layer</source>
            <translation>%1 in den Decoder-Schichten, %2 in der Ausgabeschicht</translation>
        </message>
        <message>
            <source>Time</source>
            <translation>Dauer</translation>
        </message>
        <message>
            <source>Perplexity</source>
            <translation>Perplexität</translation>
        </message>
        <message>
            <source>%1 (the source: %2, %3)</source>
            <translation>%1 (die Quelle: %2, %3)</translation>
        </message>
        <message>
            <source>KL divergence</source>
            <translation>KL-Divergenz</translation>
        </message>
        <message>
            <source>%1 on average, %2 at the 99.9th percentile</source>
            <translation>%1 im Mittel, %2 beim 99,9. Perzentil</translation>
        </message>
        <message>
            <source>Same top token</source>
            <translation>Gleiches wahrscheinlichstes Token</translation>
        </message>
        <message>
            <source>%1 % of %2 positions</source>
            <translation>%1 % von %2 Positionen</translation>
        </message>
        <message>
            <source>Measured on held-out text that was not part of the calibration. Lower perplexity and KL divergence are better; a KL divergence below 0.05 is hard to notice in use.</source>
            <translation>Gemessen auf zurückgehaltenem Text, der nicht Teil der Kalibrierung war. Niedrigere Perplexität und KL-Divergenz sind besser; eine KL-Divergenz unter 0,05 fällt im Gebrauch kaum auf.</translation>
        </message>
        <message>
            <source>The quality was not measured.</source>
            <translation>Die Qualität wurde nicht gemessen.</translation>
        </message>
        <message>
            <source>Folder</source>
            <translation>Ordner</translation>
        </message>
        <message>
            <source>Folder of the quantized model</source>
            <translation>Ordner des quantisierten Modells</translation>
        </message>
    </context>
    <context>
        <name>QuantizeReviewPage</name>
        <message>
            <source>Ready to quantize</source>
            <translation>Bereit zum Quantisieren</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>Modell</translation>
        </message>
        <message>
            <source>Target</source>
            <translation>Ziel</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, group size %2%3</source>
            <translation>GPTQ, %1 Bit, Gruppengröße %2%3</translation>
        </message>
        <message>
            <source>, act-order</source>
            <translation>, Act-Order</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, one group per column%2</source>
            <translation>GPTQ, %1 Bit, eine Gruppe pro Spalte%2</translation>
        </message>
        <message>
            <source>EXL2, %1 bits per weight, head %2 bits</source>
            <translation>EXL2, %1 Bit pro Gewicht, Kopf %2 Bit</translation>
        </message>
        <message>
            <source>Estimated size</source>
            <translation>Geschätzte Größe</translation>
        </message>
        <message>
            <source>≈ %1 on disk, ≈ %2 of GPU memory at %3 tokens</source>
            <translation>≈ %1 auf dem Datenträger, ≈ %2 GPU-Speicher bei %3 Token</translation>
        </message>
        <message>
            <source>Calibration</source>
            <translation>Kalibrierung</translation>
        </message>
        <message>
            <source>Hearth's built-in set</source>
            <translation>Hearths eingebauter Satz</translation>
        </message>
        <message>
            <source>Output folder</source>
            <translation>Zielordner</translation>
        </message>
        <message>
            <source>Folder to write the quantized model to</source>
            <translation>Ordner, in den das quantisierte Modell geschrieben wird</translation>
        </message>
        <message>
            <source>Choose…</source>
            <translation>Auswählen…</translation>
        </message>
        <message>
            <source>Choose the folder to put the quantized model in</source>
            <translation>Den Ordner für das quantisierte Modell auswählen</translation>
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
            <source>Quantize on the GPU</source>
            <translation>Auf der GPU quantisieren</translation>
        </message>
        <message>
            <source>No CUDA GPU is available here (no device, no driver, or a build without CUDA).</source>
            <translation>Hier ist keine CUDA-GPU verfügbar (kein Gerät, kein Treiber oder ein Build ohne CUDA).</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>Quantize on the CPU</source>
            <translation>Auf der CPU quantisieren</translation>
        </message>
        <message>
            <source>Afterwards, measure perplexity and KL divergence against the source on held-out text</source>
            <translation>Danach Perplexität und KL-Divergenz gegenüber der Quelle auf zurückgehaltenem Text messen</translation>
        </message>
        <message>
            <source>Measure the quality of the result afterwards</source>
            <translation>Danach die Qualität des Ergebnisses messen</translation>
        </message>
        <message>
            <source>Where should the quantized model go?</source>
            <translation>Wohin soll das quantisierte Modell?</translation>
        </message>
    </context>
    <context>
        <name>QuantizeRunPage</name>
        <message>
            <source>Stopping…</source>
            <translation>Wird angehalten…</translation>
        </message>
        <message>
            <source>Quantizing %1</source>
            <translation>%1 wird quantisiert</translation>
        </message>
        <message>
            <source>Stopped</source>
            <translation>Angehalten</translation>
        </message>
        <message>
            <source>The job failed</source>
            <translation>Der Auftrag ist fehlgeschlagen</translation>
        </message>
        <message>
            <source>Stages</source>
            <translation>Phasen</translation>
        </message>
        <message>
            <source>done</source>
            <translation>erledigt</translation>
        </message>
        <message>
            <source>in progress</source>
            <translation>läuft</translation>
        </message>
        <message>
            <source>waiting</source>
            <translation>wartet</translation>
        </message>
        <message>
            <source>Progress of the whole job</source>
            <translation>Fortschritt des gesamten Auftrags</translation>
        </message>
        <message>
            <source>%1 percent</source>
            <translation>%1 Prozent</translation>
        </message>
        <message>
            <source>%1 — step %2 of %3</source>
            <translation>%1 – Schritt %2 von %3</translation>
        </message>
        <message>
            <source>%1 %</source>
            <translation>%1 %</translation>
        </message>
        <message>
            <source>Layer %1 of %2 · %3</source>
            <translation>Schicht %1 von %2 · %3</translation>
        </message>
        <message>
            <source>Layers</source>
            <translation>Schichten</translation>
        </message>
        <message>
            <source>Layer %1 of %2</source>
            <translation>Schicht %1 von %2</translation>
        </message>
        <message>
            <source>Elapsed</source>
            <translation>Vergangen</translation>
        </message>
        <message>
            <source>Remaining</source>
            <translation>Verbleibend</translation>
        </message>
        <message>
            <source>about %1</source>
            <translation>etwa %1</translation>
        </message>
        <message>
            <source>working it out…</source>
            <translation>wird ermittelt…</translation>
        </message>
        <message>
            <source>The job was stopped. Its work so far is kept: resume it now or later, even after restarting Hearth.</source>
            <translation>Der Auftrag wurde angehalten. Die bisherige Arbeit bleibt erhalten: Setzen Sie ihn jetzt oder später fort, auch nach einem Neustart von Hearth.</translation>
        </message>
        <message>
            <source>The job was stopped before it began.</source>
            <translation>Der Auftrag wurde angehalten, bevor er begann.</translation>
        </message>
        <message>
            <source>The job stopped with an error. Its work so far is kept; once the cause is fixed, it can resume.</source>
            <translation>Der Auftrag wurde mit einem Fehler beendet. Die bisherige Arbeit bleibt erhalten; sobald die Ursache behoben ist, kann er fortgesetzt werden.</translation>
        </message>
        <message>
            <source>The job stopped with an error.</source>
            <translation>Der Auftrag wurde mit einem Fehler beendet.</translation>
        </message>
        <message>
            <source>Log</source>
            <translation>Protokoll</translation>
        </message>
        <message>
            <source>Messages of the job</source>
            <translation>Meldungen des Auftrags</translation>
        </message>
        <message>
            <source>No messages.</source>
            <translation>Keine Meldungen.</translation>
        </message>
    </context>
    <context>
        <name>QuantizeSizePage</name>
        <message>
            <source>How many bits per weight?</source>
            <translation>Wie viele Bit pro Gewicht?</translation>
        </message>
        <message>
            <source>How many bits, in which groups?</source>
            <translation>Wie viele Bit, in welchen Gruppen?</translation>
        </message>
        <message>
            <source>Bits per weight</source>
            <translation>Bit pro Gewicht</translation>
        </message>
        <message>
            <source>%1 bpw</source>
            <translation>%1 bpw</translation>
        </message>
        <message>
            <source>Bits per weight, from 2 to 8</source>
            <translation>Bit pro Gewicht, von 2 bis 8</translation>
        </message>
        <message>
            <source>%1 bits per weight</source>
            <translation>%1 Bit pro Gewicht</translation>
        </message>
        <message>
            <source>This model allows %1 to %2 bits per weight.</source>
            <translation>Dieses Modell erlaubt %1 bis %2 Bit pro Gewicht.</translation>
        </message>
        <message>
            <source>Output layer (head)</source>
            <translation>Ausgabeschicht (Kopf)</translation>
        </message>
        <message>
            <source>Bits of the output layer, which turns hidden states into token scores. It is sensitive: 6 bits is the usual choice.</source>
            <translation>Bit der Ausgabeschicht, die verborgene Zustände in Token-Bewertungen umwandelt. Sie ist empfindlich: 6 Bit ist die übliche Wahl.</translation>
        </message>
        <message>
            <source>%1 bits</source>
            <translation>%1 Bit</translation>
        </message>
        <message>
            <source>Bits of the output layer</source>
            <translation>Bit der Ausgabeschicht</translation>
        </message>
        <message>
            <source>Bits</source>
            <translation>Bit</translation>
        </message>
        <message>
            <source>Group size</source>
            <translation>Gruppengröße</translation>
        </message>
        <message>
            <source>How many weights share one scale. Smaller groups are more accurate and a little larger.</source>
            <translation>Wie viele Gewichte sich einen Skalierungsfaktor teilen. Kleinere Gruppen sind genauer und etwas größer.</translation>
        </message>
        <message>
            <source>One group per column</source>
            <translation>Eine Gruppe pro Spalte</translation>
        </message>
        <message>
            <source>Act-order: quantize the most important columns first</source>
            <translation>Act-Order: die wichtigsten Spalten zuerst quantisieren</translation>
        </message>
        <message>
            <source>Size on disk</source>
            <translation>Größe auf dem Datenträger</translation>
        </message>
        <message>
            <source>Working out the size</source>
            <translation>Größe wird ermittelt</translation>
        </message>
        <message>
            <source>≈ %1</source>
            <translation>≈ %1</translation>
        </message>
        <message>
            <source>The source takes %1 on disk; the decoder's %2 weights become %3 bits each on average.</source>
            <translation>Die Quelle belegt %1 auf dem Datenträger; die %2 Gewichte des Decoders werden im Mittel zu je %3 Bit.</translation>
        </message>
        <message>
            <source>GPU memory at a context of</source>
            <translation>GPU-Speicher bei einem Kontext von</translation>
        </message>
        <message>
            <source>Context length in tokens for the memory estimate</source>
            <translation>Kontextlänge in Token für die Speicherschätzung</translation>
        </message>
        <message>
            <source>tokens</source>
            <translation>Token</translation>
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
            <source>Fits: %1 is free on %2 now.</source>
            <translation>Passt: Auf %2 sind jetzt %1 frei.</translation>
        </message>
        <message>
            <source>Does not fit the %1 free on %2 now: choose fewer bits or a shorter context.</source>
            <translation>Passt nicht in die %1, die auf %2 jetzt frei sind: Wählen Sie weniger Bit oder einen kürzeren Kontext.</translation>
        </message>
        <message>
            <source>No GPU here to compare with: this is what a GPU would need to run the result with this context.</source>
            <translation>Hier gibt es keine GPU zum Vergleich: So viel bräuchte eine GPU, um das Ergebnis mit diesem Kontext auszuführen.</translation>
        </message>
    </context>
    <context>
        <name>QuantizeSourcePage</name>
        <message>
            <source>Which model do you want to quantize?</source>
            <translation>Welches Modell möchten Sie quantisieren?</translation>
        </message>
        <message>
            <source>An unquantized model: a folder in the Hugging Face layout (config.json with fp16, bf16 or fp32 safetensors) or a GGUF file.</source>
            <translation>Ein nicht quantisiertes Modell: ein Ordner im Hugging-Face-Layout (config.json mit fp16-, bf16- oder fp32-Safetensors) oder eine GGUF-Datei.</translation>
        </message>
        <message>
            <source>Interrupted jobs</source>
            <translation>Unterbrochene Aufträge</translation>
        </message>
        <message>
            <source>From the library</source>
            <translation>Aus der Bibliothek</translation>
        </message>
        <message>
            <source>Models in the library that can be quantized</source>
            <translation>Modelle der Bibliothek, die quantisiert werden können</translation>
        </message>
        <message>
            <source>%1, %2, %3 parameters</source>
            <translation>%1, %2, %3 Parameter</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3</source>
            <translation>%1 · %2 Parameter · %3</translation>
        </message>
        <message>
            <source>already quantized GGUF</source>
            <translation>bereits quantisiertes GGUF</translation>
        </message>
        <message>
            <source>Looking for models…</source>
            <translation>Suche nach Modellen…</translation>
        </message>
        <message>
            <source>The library has no fp16 or GGUF models. Choose a folder or a file below.</source>
            <translation>Die Bibliothek enthält keine fp16- oder GGUF-Modelle. Wählen Sie unten einen Ordner oder eine Datei.</translation>
        </message>
        <message>
            <source>Or a folder or file</source>
            <translation>Oder ein Ordner oder eine Datei</translation>
        </message>
        <message>
            <source>Path to a model folder or a .gguf file</source>
            <translation>Pfad zu einem Modellordner oder einer .gguf-Datei</translation>
        </message>
        <message>
            <source>Path of the model to quantize</source>
            <translation>Pfad des zu quantisierenden Modells</translation>
        </message>
        <message>
            <source>Folder…</source>
            <translation>Ordner…</translation>
        </message>
        <message>
            <source>Choose a model folder</source>
            <translation>Einen Modellordner auswählen</translation>
        </message>
        <message>
            <source>GGUF file…</source>
            <translation>GGUF-Datei…</translation>
        </message>
        <message>
            <source>Choose a GGUF file</source>
            <translation>Eine GGUF-Datei auswählen</translation>
        </message>
        <message>
            <source>Reading the model</source>
            <translation>Modell wird gelesen</translation>
        </message>
        <message>
            <source>Reading the model…</source>
            <translation>Modell wird gelesen…</translation>
        </message>
        <message>
            <source>%1 · %2 · %3 parameters · %4 layers · trained for %5 tokens · %6 on disk</source>
            <translation>%1 · %2 · %3 Parameter · %4 Schichten · trainiert für %5 Token · %6 auf dem Datenträger</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF-Modelle (*.gguf)</translation>
        </message>
    </context>
    <context>
        <name>QuantizeStepBar</name>
        <message>
            <source>Steps of the quantization</source>
            <translation>Schritte der Quantisierung</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>Modell</translation>
        </message>
        <message>
            <source>Format</source>
            <translation>Format</translation>
        </message>
        <message>
            <source>Size</source>
            <translation>Größe</translation>
        </message>
        <message>
            <source>Calibration</source>
            <translation>Kalibrierung</translation>
        </message>
        <message>
            <source>Review</source>
            <translation>Überblick</translation>
        </message>
        <message>
            <source>Run</source>
            <translation>Ausführung</translation>
        </message>
        <message>
            <source>Result</source>
            <translation>Ergebnis</translation>
        </message>
        <message>
            <source>Step %1 of %2: %3</source>
            <translation>Schritt %1 von %2: %3</translation>
        </message>
        <message>
            <source>current step</source>
            <translation>aktueller Schritt</translation>
        </message>
        <message>
            <source>done; go back to it</source>
            <translation>erledigt; dorthin zurückgehen</translation>
        </message>
    </context>
    <context>
        <name>QuantizeText</name>
        <message>
            <source>Preparing</source>
            <translation>Vorbereitung</translation>
        </message>
        <message>
            <source>Measuring the layers</source>
            <translation>Schichten werden vermessen</translation>
        </message>
        <message>
            <source>Choosing a setting per layer</source>
            <translation>Einstellung je Schicht wird gewählt</translation>
        </message>
        <message>
            <source>Quantizing</source>
            <translation>Quantisierung</translation>
        </message>
        <message>
            <source>Writing the model</source>
            <translation>Modell wird geschrieben</translation>
        </message>
        <message>
            <source>Measuring quality</source>
            <translation>Qualität wird gemessen</translation>
        </message>
        <message>
            <source>Done</source>
            <translation>Fertig</translation>
        </message>
        <message>
            <source>unknown</source>
            <translation>unbekannt</translation>
        </message>
        <message>
            <source>%1 s</source>
            <translation>%1 s</translation>
        </message>
        <message>
            <source>%1 min %2 s</source>
            <translation>%1 min %2 s</translation>
        </message>
        <message>
            <source>%1 h %2 min</source>
            <translation>%1 h %2 min</translation>
        </message>
    </context>
    <context>
        <name>QuantizeWizard</name>
        <message>
            <source>This model is already quantized (%1). Choose an fp16 model folder or a GGUF file.</source>
            <translation>Dieses Modell ist bereits quantisiert (%1). Wählen Sie einen fp16-Modellordner oder eine GGUF-Datei.</translation>
        </message>
        <message>
            <source>This GGUF file is already quantized (%1). Its weights are used as they decode, so the result keeps that quantization's error on top of the new one; start from an F16 or BF16 model when you have one.</source>
            <translation>Diese GGUF-Datei ist bereits quantisiert (%1). Ihre Gewichte werden so verwendet, wie sie sich dekodieren; das Ergebnis behält also den Fehler dieser Quantisierung zusätzlich zum neuen. Beginnen Sie mit einem F16- oder BF16-Modell, wenn Sie eines haben.</translation>
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
        <message>
            <source>Local server</source>
            <translation>Lokaler Server</translation>
        </message>
        <message>
            <source>Other programs on this computer can use the loaded model through an OpenAI-compatible API. Their requests and your chats run together on the same model; loading another model serves that one.</source>
            <translation>Andere Programme auf diesem Computer können das geladene Modell über eine OpenAI-kompatible API nutzen. Ihre Anfragen und Ihre Chats laufen gemeinsam auf demselben Modell; wird ein anderes Modell geladen, wird dieses bereitgestellt.</translation>
        </message>
        <message>
            <source>Let other programs use the loaded model</source>
            <translation>Anderen Programmen das geladene Modell bereitstellen</translation>
        </message>
        <message>
            <source>Running: serving %1.</source>
            <translation>Läuft: stellt %1 bereit.</translation>
        </message>
        <message>
            <source>Waiting for a model: the server starts when a model is loaded.</source>
            <translation>Wartet auf ein Modell: Der Server startet, sobald ein Modell geladen ist.</translation>
        </message>
        <message>
            <source>Port %1 is in use by another program or cannot be opened. Choose another port.</source>
            <translation>Port %1 wird von einem anderen Programm verwendet oder kann nicht geöffnet werden. Wählen Sie einen anderen Port.</translation>
        </message>
        <message>
            <source>The server could not start: %1</source>
            <translation>Der Server konnte nicht starten: %1</translation>
        </message>
        <message>
            <source>This build of Hearth has no local server.</source>
            <translation>Diese Version von Hearth enthält keinen lokalen Server.</translation>
        </message>
        <message>
            <source>Off.</source>
            <translation>Aus.</translation>
        </message>
        <message>
            <source>Requests running: %1 · answered: %2</source>
            <translation>Laufende Anfragen: %1 · beantwortet: %2</translation>
        </message>
        <message>
            <source>Address</source>
            <translation>Adresse</translation>
        </message>
        <message>
            <source>Address to give other programs</source>
            <translation>Adresse für andere Programme</translation>
        </message>
        <message>
            <source>Copy the address</source>
            <translation>Adresse kopieren</translation>
        </message>
        <message>
            <source>Port</source>
            <translation>Port</translation>
        </message>
        <message>
            <source>API key</source>
            <translation>API-Schlüssel</translation>
        </message>
        <message>
            <source>None</source>
            <translation>Keiner</translation>
        </message>
        <message>
            <source>Copy the API key</source>
            <translation>API-Schlüssel kopieren</translation>
        </message>
        <message>
            <source>Generate a key</source>
            <translation>Schlüssel erzeugen</translation>
        </message>
        <message>
            <source>Show the key</source>
            <translation>Schlüssel anzeigen</translation>
        </message>
        <message>
            <source>The server listens on this computer only (127.0.0.1). Without a key, any program here may use it; with one, programs send it as their API key.</source>
            <translation>Der Server ist nur auf diesem Computer erreichbar (127.0.0.1). Ohne Schlüssel darf jedes Programm hier ihn nutzen; mit Schlüssel senden Programme ihn als ihren API-Schlüssel.</translation>
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
        <name>hearth::app::AdapterList</name>
        <message>
            <source>%1 no longer exists.</source>
            <translation>%1 existiert nicht mehr.</translation>
        </message>
        <message>
            <source>%1 cannot be applied to the loaded model: %2</source>
            <translation>%1 kann auf das geladene Modell nicht angewendet werden: %2</translation>
        </message>
        <message numerus="yes">
            <source>At most %n adapter(s) can be applied at once: switch one off first.</source>
            <translation>
                <numerusform>Es kann höchstens %n Adapter gleichzeitig angewendet werden: Schalten Sie zuerst einen aus.</numerusform>
                <numerusform>Es können höchstens %n Adapter gleichzeitig angewendet werden: Schalten Sie zuerst einen aus.</numerusform>
            </translation>
        </message>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 existiert nicht.</translation>
        </message>
        <message>
            <source>%1 is not a LoRA adapter: choose a folder with adapter_config.json or a GGUF adapter file.</source>
            <translation>%1 ist kein LoRA-Adapter: Wählen Sie einen Ordner mit adapter_config.json oder eine GGUF-Adapterdatei.</translation>
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
        <message>
            <source>%1 is a LoRA adapter, not a model: add it in the Adapters tab.</source>
            <translation>%1 ist ein LoRA-Adapter, kein Modell: Fügen Sie ihn im Reiter „Adapter“ hinzu.</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeForm</name>
        <message>
            <source>Choose a model to quantize.</source>
            <translation>Wählen Sie ein Modell zum Quantisieren.</translation>
        </message>
        <message>
            <source>Reading the model…</source>
            <translation>Modell wird gelesen…</translation>
        </message>
        <message>
            <source>Choose EXL2 or GPTQ.</source>
            <translation>Wählen Sie EXL2 oder GPTQ.</translation>
        </message>
        <message>
            <source>Head bits must be 2, 3, 4, 5, 6 or 8.</source>
            <translation>Die Bit des Kopfes müssen 2, 3, 4, 5, 6 oder 8 sein.</translation>
        </message>
        <message>
            <source>Choose between 2.0 and 8.0 bits per weight.</source>
            <translation>Wählen Sie zwischen 2,0 und 8,0 Bit pro Gewicht.</translation>
        </message>
        <message>
            <source>GPTQ bits must be 2, 3, 4 or 8.</source>
            <translation>GPTQ-Bit müssen 2, 3, 4 oder 8 sein.</translation>
        </message>
        <message>
            <source>The group size must be positive, or −1 for one group per column.</source>
            <translation>Die Gruppengröße muss positiv sein, oder −1 für eine Gruppe pro Spalte.</translation>
        </message>
        <message>
            <source>Working out the size…</source>
            <translation>Größe wird ermittelt…</translation>
        </message>
        <message>
            <source>The size cannot be estimated: %1</source>
            <translation>Die Größe kann nicht geschätzt werden: %1</translation>
        </message>
        <message>
            <source>This model needs at least %1 bits per weight (the cheapest setting of every layer).</source>
            <translation>Dieses Modell braucht mindestens %1 Bit pro Gewicht (die sparsamste Einstellung jeder Schicht).</translation>
        </message>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 existiert nicht.</translation>
        </message>
        <message>
            <source>%1 is not a file.</source>
            <translation>%1 ist keine Datei.</translation>
        </message>
        <message>
            <source>Calibration text must be a .txt, .md or .jsonl file.</source>
            <translation>Der Kalibrierungstext muss eine .txt-, .md- oder .jsonl-Datei sein.</translation>
        </message>
        <message>
            <source>%1 cannot be read.</source>
            <translation>%1 kann nicht gelesen werden.</translation>
        </message>
        <message>
            <source>%1 is empty.</source>
            <translation>%1 ist leer.</translation>
        </message>
        <message>
            <source>Choose where to write the quantized model.</source>
            <translation>Wählen Sie, wohin das quantisierte Modell geschrieben wird.</translation>
        </message>
        <message>
            <source>The output folder must be a full path, such as %1.</source>
            <translation>Der Zielordner muss ein vollständiger Pfad sein, etwa %1.</translation>
        </message>
        <message>
            <source>%1 exists and is not a folder.</source>
            <translation>%1 existiert und ist kein Ordner.</translation>
        </message>
        <message>
            <source>%1 exists and is not empty: choose another folder.</source>
            <translation>%1 existiert und ist nicht leer: Wählen Sie einen anderen Ordner.</translation>
        </message>
        <message>
            <source>%1 is not writable.</source>
            <translation>%1 ist nicht beschreibbar.</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeJobs</name>
        <message>
            <source>“%1” is loaded on the GPU. Starting the job unloads it, so that the quantizer has the GPU's memory; while the job runs, models load on the CPU only.</source>
            <translation>„%1“ ist auf der GPU geladen. Der Start des Auftrags entlädt es, damit der Quantisierer den Speicher der GPU hat; solange der Auftrag läuft, werden Modelle nur auf der CPU geladen.</translation>
        </message>
        <message>
            <source>While the job runs, models load on the CPU only: the quantizer needs the GPU's memory.</source>
            <translation>Solange der Auftrag läuft, werden Modelle nur auf der CPU geladen: Der Quantisierer braucht den Speicher der GPU.</translation>
        </message>
        <message>
            <source>The job uses every CPU core: a model answering on the CPU is slower until it finishes.</source>
            <translation>Der Auftrag nutzt alle CPU-Kerne: Ein Modell, das auf der CPU antwortet, ist langsamer, bis er fertig ist.</translation>
        </message>
        <message>
            <source>A quantization job is already running.</source>
            <translation>Es läuft bereits ein Quantisierungsauftrag.</translation>
        </message>
        <message>
            <source>No CUDA GPU is available here (no device, no driver, or a build without CUDA): quantize on the CPU.</source>
            <translation>Hier ist keine CUDA-GPU verfügbar (kein Gerät, kein Treiber oder ein Build ohne CUDA): Quantisieren Sie auf der CPU.</translation>
        </message>
        <message>
            <source>The chat model is busy. Wait until it has finished answering or loading, or stop it, then start the job.</source>
            <translation>Das Chatmodell ist beschäftigt. Warten Sie, bis es fertig geantwortet oder geladen hat, oder halten Sie es an, und starten Sie dann den Auftrag.</translation>
        </message>
        <message>
            <source>Choose the GPU or the CPU.</source>
            <translation>Wählen Sie die GPU oder die CPU.</translation>
        </message>
        <message>
            <source>Unloading the chat model to free the GPU…</source>
            <translation>Chatmodell wird entladen, um die GPU freizugeben…</translation>
        </message>
        <message>
            <source>The GPU is in use by a quantization job. Load the model on the CPU, or wait until the job has finished or is cancelled.</source>
            <translation>Die GPU wird von einem Quantisierungsauftrag genutzt. Laden Sie das Modell auf der CPU, oder warten Sie, bis der Auftrag beendet oder abgebrochen ist.</translation>
        </message>
        <message>
            <source>Stopped before the job began.</source>
            <translation>Angehalten, bevor der Auftrag begann.</translation>
        </message>
        <message>
            <source>Stopped. The work done so far is kept in %1.</source>
            <translation>Angehalten. Die bisherige Arbeit bleibt in %1 erhalten.</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeWizard</name>
        <message>
            <source>Choose a model to quantize.</source>
            <translation>Wählen Sie ein Modell zum Quantisieren.</translation>
        </message>
        <message>
            <source>This model cannot be read: %1</source>
            <translation>Dieses Modell kann nicht gelesen werden: %1</translation>
        </message>
        <message>
            <source>The quantizer cannot take this model: %1</source>
            <translation>Der Quantisierer kann dieses Modell nicht verarbeiten: %1</translation>
        </message>
        <message>
            <source>EXL2, %1 bits per weight, head %2 bits</source>
            <translation>EXL2, %1 Bit pro Gewicht, Kopf %2 Bit</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, one group per column</source>
            <translation>GPTQ, %1 Bit, eine Gruppe pro Spalte</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, group size %2</source>
            <translation>GPTQ, %1 Bit, Gruppengröße %2</translation>
        </message>
        <message>
            <source>An interrupted job is writing to this folder: resume it or discard it first.</source>
            <translation>Ein unterbrochener Auftrag schreibt in diesen Ordner: Setzen Sie ihn zuerst fort oder verwerfen Sie ihn.</translation>
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
        <message>
            <source>Open the quantization wizard on this model, save screenshots named after --screenshot and quit.</source>
            <translation>Den Quantisierungsassistenten für dieses Modell öffnen, Bildschirmfotos mit dem Namen aus --screenshot speichern und beenden.</translation>
        </message>
        <message>
            <source>With --wizard-demo: also quantize, to the result.</source>
            <translation>Mit --wizard-demo: auch quantisieren, bis zum Ergebnis.</translation>
        </message>
    </context>
</TS>
