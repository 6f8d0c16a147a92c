// Draws SVG charts as vector graphics inside a QTextDocument: an inline
// text object (QTextObjectInterface) whose size comes from its format and
// whose painting is QSvgRenderer's. The PDF renderer swaps the report's
// <img src="bpchart:N"> placeholders for these objects, so the PDF's charts
// are the HTML report's SVG, unrasterized.
//
// Thread: whatever thread owns the document (QSvgRenderer and QPainter on a
// QPdfWriter work off the GUI thread); a QGuiApplication must exist.
#pragma once

#include <QObject>
#include <QTextObjectInterface>

#include <functional>
#include <vector>

class QTextDocument;

namespace bp::report {

class SvgTextObject : public QObject, public QTextObjectInterface {
    Q_OBJECT
    Q_INTERFACES(QTextObjectInterface)
public:
    static constexpr int kObjectType = QTextFormat::UserObject + 71;
    static constexpr int kIndexProperty = QTextFormat::UserProperty + 71;

    // `svgs[i]` is the document of chart i.
    explicit SvgTextObject(std::vector<QByteArray> svgs, QObject *parent = nullptr);

    // Registers this handler with `document`'s layout and replaces every
    // image named `imageName(i)` by chart i, keeping its width and height.
    // Returns how many placeholders were replaced.
    int install(QTextDocument &document, const std::function<QString(int)> &imageName);

    QSizeF intrinsicSize(QTextDocument *document, int position, const QTextFormat &format) override;
    void drawObject(QPainter *painter, const QRectF &rect, QTextDocument *document, int position,
                    const QTextFormat &format) override;

private:
    std::vector<QByteArray> m_svgs;
};

} // namespace bp::report
